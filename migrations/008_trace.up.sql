-- The link an inbox event keeps to the delivery that stored it
-- (Observer.Link): a W3C traceparent, so that the span of each attempt
-- links to the span of the delivery. '' when none was given. Adding a
-- column with a constant default rewrites no rows.

ALTER TABLE {{schema}}.idempotency_inbox ADD COLUMN IF NOT EXISTS "trace" text NOT NULL DEFAULT '';
