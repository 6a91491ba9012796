-- Retention (Prune) and Forget.
-- {{schema}} is replaced by the configured schema, quoted.
--
-- Migrate runs in one transaction, where CREATE INDEX cannot be
-- CONCURRENTLY: building these blocks writes to the inbox and the guards
-- until it commits. On a large inbox, create them beforehand with CREATE
-- INDEX CONCURRENTLY and these definitions; IF NOT EXISTS then skips them.

-- A CREATE INDEX CONCURRENTLY that failed or was cancelled leaves an
-- invalid index of its name, which PostgreSQL updates on every write and
-- never reads, and which IF NOT EXISTS would take for the index: it is
-- dropped, and built below. (As in 003, the block reads the schema's name
-- from idempotency.migrate_schema.)
DO $invalid$
DECLARE
    idx text;
BEGIN
    FOREACH idx IN ARRAY ARRAY['idempotency_inbox_finished_idx', 'idempotency_guards_event_id_idx'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index
                   WHERE indexrelid = to_regclass(format('%I.%I', current_setting('idempotency.migrate_schema'), idx))
                     AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I.%I', current_setting('idempotency.migrate_schema'), idx);
        END IF;
    END LOOP;
END
$invalid$;

-- Prune deletes finished events, finished tasks and dead letters by the
-- time they finished, batch by batch; without this index each batch would
-- scan again past the rows it keeps (tasks are kept by default).
CREATE INDEX IF NOT EXISTS idempotency_inbox_finished_idx
    ON {{schema}}.idempotency_inbox (kind, state, finished_at)
    WHERE finished_at IS NOT NULL;

-- Forget deletes the guards that an event's transaction claimed.
CREATE INDEX IF NOT EXISTS idempotency_guards_event_id_idx
    ON {{schema}}.idempotency_guards (event_id);
