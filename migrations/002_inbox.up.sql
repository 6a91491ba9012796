-- The durable inbox: verified events stored at ingest and applied later by
-- workers (inbox.go). {{schema}} is replaced by the configured schema, quoted.
-- Every time is the inbox's clock (InboxConfig.Now), never now().

CREATE TABLE IF NOT EXISTS {{schema}}.idempotency_inbox (
    event_id        text        PRIMARY KEY,
    event_type      text        NOT NULL,
    object_id       text        NOT NULL DEFAULT '',
    account         text        NOT NULL DEFAULT '',
    livemode        boolean     NOT NULL DEFAULT false,
    api_version     text        NOT NULL DEFAULT '',
    created         timestamptz NOT NULL,
    payload         bytea       NOT NULL, -- the verified request body, byte for byte
    state           text        NOT NULL CHECK (state IN
                        ('pending', 'processing', 'processed', 'skipped', 'failed', 'dead_letter', 'ignored')),
    attempt         integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    received_at     timestamptz NOT NULL,
    attempted_at    timestamptz,
    next_attempt_at timestamptz, -- pending and failed: when due
    finished_at     timestamptz, -- final states
    lease_until     timestamptz  -- processing: when another worker may take it over
);

-- Leasing: due pending and failed events, in the order they came due.
CREATE INDEX IF NOT EXISTS idempotency_inbox_due_idx
    ON {{schema}}.idempotency_inbox (next_attempt_at)
    WHERE state IN ('pending', 'failed');

-- Leasing: leases expired by a worker that died; also the object rule's
-- "processing under an unexpired lease" (few rows: one per busy worker).
CREATE INDEX IF NOT EXISTS idempotency_inbox_lease_idx
    ON {{schema}}.idempotency_inbox (lease_until)
    WHERE state = 'processing';

-- Leasing: per object, whether an event that sorts before is still to apply.
CREATE INDEX IF NOT EXISTS idempotency_inbox_object_idx
    ON {{schema}}.idempotency_inbox (object_id, created, event_id)
    WHERE state IN ('pending', 'failed', 'processing') AND object_id <> '';

-- Listing, newest received first; redrive by time.
CREATE INDEX IF NOT EXISTS idempotency_inbox_received_at_idx
    ON {{schema}}.idempotency_inbox (received_at);

-- Stats: counts by state and the oldest event still to apply, from the
-- index alone.
CREATE INDEX IF NOT EXISTS idempotency_inbox_state_idx
    ON {{schema}}.idempotency_inbox (state, received_at);
