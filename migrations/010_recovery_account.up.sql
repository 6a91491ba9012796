-- The connected account a recovery checkpoint lists the events of
-- (RecoverOptions.Account, sent as Stripe-Account); '' for the client's
-- own account, as every checkpoint made before it reads. Adding a column
-- with a constant default rewrites no rows.
-- {{schema}} is replaced by the configured schema, quoted.

ALTER TABLE {{schema}}."idempotency_recovery" ADD COLUMN IF NOT EXISTS "account" text NOT NULL DEFAULT '';
