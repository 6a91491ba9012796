-- Prune clears the arguments of tasks finished longer than
-- Retention.Payloads ago, keeping their rows, and tasks are kept for good
-- by default. This index holds only the finished tasks whose arguments
-- are still there, so that a batch reads the tasks it clears, not every
-- task ever finished; a cleared task leaves it.
-- {{schema}} is replaced by the configured schema, quoted.
--
-- As 007's, it can be created beforehand with CREATE INDEX CONCURRENTLY
-- and this definition on a large inbox; IF NOT EXISTS then skips it, and
-- an invalid index of its name, left by one that failed, is dropped and
-- built below.
DO $invalid$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass(format('%I.%I', current_setting('idempotency.migrate_schema'), 'idempotency_inbox_task_args_idx'))
                 AND NOT indisvalid) THEN
        EXECUTE format('DROP INDEX %I.%I', current_setting('idempotency.migrate_schema'), 'idempotency_inbox_task_args_idx');
    END IF;
END
$invalid$;

CREATE INDEX IF NOT EXISTS idempotency_inbox_task_args_idx
    ON {{schema}}.idempotency_inbox (finished_at)
    WHERE kind = 'task' AND state IN ('processed', 'skipped') AND payload <> '';
