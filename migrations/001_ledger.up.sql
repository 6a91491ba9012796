-- The ledger of claimed Stripe events and the natural-key guards.
-- {{schema}} is replaced by the configured schema, quoted.

CREATE TABLE IF NOT EXISTS {{schema}}.idempotency_events (
    event_id     text        PRIMARY KEY,
    event_type   text        NOT NULL,
    object_id    text        NOT NULL DEFAULT '',
    outcome      text        NOT NULL CHECK (outcome IN ('processed', 'skipped', 'ignored')),
    skip_reason  text        NOT NULL DEFAULT '',
    livemode     boolean     NOT NULL DEFAULT false,
    account      text        NOT NULL DEFAULT '',
    received_at  timestamptz NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Pruning processed ids after Stripe's replay horizon scans by time.
CREATE INDEX IF NOT EXISTS idempotency_events_processed_at_idx
    ON {{schema}}.idempotency_events (processed_at);

CREATE TABLE IF NOT EXISTS {{schema}}.idempotency_guards (
    scope      text        NOT NULL,
    key        text        NOT NULL,
    event_id   text        NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (scope, key)
);
