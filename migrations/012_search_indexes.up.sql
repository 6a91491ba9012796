-- The operator's searches by object and by type (the dashboard's search
-- and lists, idemctl list and ledger, Inbox.List and ListEvents): without
-- these indexes each read the whole table, in the inbox by receipt time
-- and in the ledger by a sequential scan, however few rows it found
-- (a search by an event's id searches by object too). The object
-- indexes leave out the rows of no object (tasks, events of none).
-- {{schema}} is replaced by the configured schema, quoted.
--
-- Migrate runs in one transaction, where CREATE INDEX cannot be
-- CONCURRENTLY: building these blocks writes to the inbox and the ledger
-- until it commits. On large tables, create them beforehand with CREATE
-- INDEX CONCURRENTLY and these definitions; IF NOT EXISTS then skips
-- them, and an invalid index of one of their names, left by a concurrent
-- build that failed or was cancelled, is dropped and built below. (As in
-- 003, the block reads the schema's name from
-- idempotency.migrate_schema.)
DO $invalid$
DECLARE
    idx text;
BEGIN
    FOREACH idx IN ARRAY ARRAY['idempotency_inbox_object_id_idx', 'idempotency_events_object_id_idx',
                               'idempotency_events_event_type_idx'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index
                   WHERE indexrelid = to_regclass(format('%I.%I', current_setting('idempotency.migrate_schema'), idx))
                     AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I.%I', current_setting('idempotency.migrate_schema'), idx);
        END IF;
    END LOOP;
END
$invalid$;

-- An object's inbox records, newest received first. The object's id is
-- indexed in the "C" collation, which Inbox.List compares it in (the same
-- answer: text equality is bytewise in every collation a database can
-- default to), and which no statement of the workers uses: the lease's
-- and HeldBy's probes of an object's unfinished events stay on
-- idempotency_inbox_object_idx, which holds those alone, where this index
-- holds every finished event of the object too.
CREATE INDEX IF NOT EXISTS idempotency_inbox_object_id_idx
    ON {{schema}}.idempotency_inbox ((object_id COLLATE "C"), received_at)
    WHERE object_id <> '';

-- An object's claims, and a type's, newest processed first.
CREATE INDEX IF NOT EXISTS idempotency_events_object_id_idx
    ON {{schema}}.idempotency_events (object_id, processed_at)
    WHERE object_id <> '';

CREATE INDEX IF NOT EXISTS idempotency_events_event_type_idx
    ON {{schema}}.idempotency_events (event_type, processed_at);
