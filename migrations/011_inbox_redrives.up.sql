-- An inbox row's redrive history: how many times Inbox.Redrive moved it
-- back to pending, and when it last did (the inbox's clock). Every row
-- stored before has been redriven 0 times, at no time (NULL). Only the
-- redrive writes them: the ingest's insert does not name them, and no
-- index holds them. Adding a column with a constant default, or a
-- nullable one, rewrites no rows.
-- {{schema}} is replaced by the configured schema, quoted.

ALTER TABLE {{schema}}."idempotency_inbox"
    ADD COLUMN IF NOT EXISTS "redrives" integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "redriven_at" timestamptz;
