-- Retention (Prune) and Forget.
-- {{schema}} is replaced by the configured schema, quoted.
--
-- Migrate runs in one transaction, where CREATE INDEX cannot be
-- CONCURRENTLY: building these blocks writes to the inbox and the guards
-- until it commits. On a large inbox, create them beforehand with CREATE
-- INDEX CONCURRENTLY and these definitions; IF NOT EXISTS then skips them.

-- Prune deletes finished events, finished tasks and dead letters by the
-- time they finished, batch by batch; without this index each batch would
-- scan again past the rows it keeps (tasks are kept by default).
CREATE INDEX IF NOT EXISTS idempotency_inbox_finished_idx
    ON {{schema}}.idempotency_inbox (kind, state, finished_at)
    WHERE finished_at IS NOT NULL;

-- Forget deletes the guards that an event's transaction claimed.
CREATE INDEX IF NOT EXISTS idempotency_guards_event_id_idx
    ON {{schema}}.idempotency_guards (event_id);
