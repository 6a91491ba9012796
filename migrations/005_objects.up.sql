-- Current state (current.go) and the order guard (order.go).
--
-- idempotency_seq orders receipts and fetches on one counter, the
-- database's, whatever the clocks of the processes: an inbox event takes
-- its number when it is stored, a synchronous delivery when its handler
-- asks for one, a fetch just before it is sent.

CREATE SEQUENCE IF NOT EXISTS {{schema}}.idempotency_seq;

-- Inbox events stored from now on carry their number (NULL before: such an
-- event takes one when its handler starts, as a synchronous delivery does).
-- {{schema_literal}} is the quoted schema as the text of an escape string
-- literal (E'...'), which reads the same whatever standard_conforming_strings.
ALTER TABLE {{schema}}.idempotency_inbox ADD COLUMN seq bigint;
ALTER TABLE {{schema}}.idempotency_inbox ALTER COLUMN seq SET DEFAULT nextval(E'{{schema_literal}}.idempotency_seq');

-- One row per (registration, object): its lock, and the number taken just
-- before its last fetch.
CREATE TABLE IF NOT EXISTS {{schema}}.idempotency_objects (
    scope      text        NOT NULL,
    object_id  text        NOT NULL,
    fetch_seq  bigint      NOT NULL DEFAULT 0,
    fetched_at timestamptz,
    PRIMARY KEY (scope, object_id)
);

-- The order guard: per (scope, key), the newest event applied.
CREATE TABLE IF NOT EXISTS {{schema}}.idempotency_order (
    scope    text        NOT NULL,
    key      text        NOT NULL,
    created  timestamptz NOT NULL,
    event_id text        NOT NULL,
    PRIMARY KEY (scope, key)
);
