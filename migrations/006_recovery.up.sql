-- Recovery checkpoints (recover.go): where Handler.Recover continues a run
-- of one name: the last event up to which every event listed was handled,
-- and the options the run listed with. {{schema}} is replaced by the
-- configured schema, quoted.

CREATE TABLE IF NOT EXISTS {{schema}}."idempotency_recovery" (
    "name"             text        PRIMARY KEY,
    "since"            timestamptz NOT NULL,
    "types"            text        NOT NULL DEFAULT '', -- sorted, comma-separated; '' for every type
    "only_undelivered" boolean     NOT NULL DEFAULT false,
    "last_event_id"    text        NOT NULL,
    "last_created"     timestamptz NOT NULL,
    "updated_at"       timestamptz NOT NULL
);
