-- Tasks (task.go): side effects enqueued in an event's transaction and run
-- by the inbox's workers, under the same leases, attempts, backoff, dead
-- letter and redrive as events. A task is a row of the inbox whose id is
-- task:<name>:<key>, so the primary key makes it once per (task, key).

ALTER TABLE {{schema}}.idempotency_inbox
    ADD COLUMN kind text NOT NULL DEFAULT 'event' CHECK (kind IN ('event', 'task'));
