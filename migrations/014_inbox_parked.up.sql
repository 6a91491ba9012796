-- Parking: a lease no longer reads, on every lease, the events waiting
-- behind earlier events of their object (a hot object's thousands of
-- updates, an outage's failed events). The lease parks the due events it
-- stepped over that wait behind an earlier event of their object that no
-- worker is applying, or behind two, and each event it takes unparks the
-- earliest parked event of its object; the leases read the due events
-- that are not parked. Parking is the workers' own bookkeeping: no
-- statement an operator sees reads it, and a parked event is pending or
-- failed as before. Adding a column with a constant default rewrites no
-- rows.
-- {{schema}} is replaced by the configured schema, quoted.
--
-- Migrate runs in one transaction, where CREATE INDEX cannot be
-- CONCURRENTLY: building these blocks writes to the inbox until it
-- commits. On a large inbox, add the column (it rewrites nothing), then
-- create the indexes beforehand with CREATE INDEX CONCURRENTLY and these
-- definitions; IF NOT EXISTS then skips them. An invalid index of one of
-- their names, left by a concurrent build that failed or was cancelled,
-- is dropped and built below. (As in 003, the block reads the schema's
-- name from idempotency.migrate_schema.)

ALTER TABLE {{schema}}.idempotency_inbox
    ADD COLUMN IF NOT EXISTS parked boolean NOT NULL DEFAULT false;

DO $invalid$
DECLARE
    idx text;
BEGIN
    FOREACH idx IN ARRAY ARRAY['idempotency_inbox_due_unparked_idx', 'idempotency_inbox_parked_idx',
                               'idempotency_inbox_object_processing_idx'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index
                   WHERE indexrelid = to_regclass(format('%I.%I', current_setting('idempotency.migrate_schema'), idx))
                     AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I.%I', current_setting('idempotency.migrate_schema'), idx);
        END IF;
    END LOOP;
END
$invalid$;

-- Leasing: due pending and failed events not parked, in the order they
-- came due. It replaces idempotency_inbox_due_idx, which held the parked
-- events too.
CREATE INDEX IF NOT EXISTS idempotency_inbox_due_unparked_idx
    ON {{schema}}.idempotency_inbox (next_attempt_at)
    WHERE state IN ('pending', 'failed') AND NOT parked;

DROP INDEX IF EXISTS {{schema}}.idempotency_inbox_due_idx;

-- Leasing: an object's parked events, earliest first, to unpark the
-- first when the lease takes an event of the object. Few rows: the
-- events of objects with a backlog.
CREATE INDEX IF NOT EXISTS idempotency_inbox_parked_idx
    ON {{schema}}.idempotency_inbox (object_id, account, created, event_id COLLATE "C")
    WHERE parked AND state IN ('pending', 'failed');

-- Leasing: an object's events being applied, for the per-object order's
-- probe of the events of an object that may be leased; the object index
-- holds all of a hot object's waiting events too.
CREATE INDEX IF NOT EXISTS idempotency_inbox_object_processing_idx
    ON {{schema}}.idempotency_inbox (object_id, account)
    WHERE state = 'processing' AND object_id <> '';
