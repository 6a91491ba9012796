-- Inbox.Stats estimates the count of a finished state (processed,
-- skipped, ignored) of a kind once it passes 50,000 rows, from the
-- planner's statistics, rather than count a table that grows with the
-- retention window. Kind and state are not independent (ignored rows are
-- all events; tasks are skipped less often than events are): without
-- these statistics the planner multiplies their frequencies, and its
-- estimate of ignored events misses a third of them. ANALYZE (and
-- autovacuum's) fills them; creating them rewrites nothing and blocks no
-- write. {{schema}} is replaced by the configured schema, quoted.
CREATE STATISTICS IF NOT EXISTS {{schema}}.idempotency_inbox_kind_state (mcv)
    ON kind, state FROM {{schema}}.idempotency_inbox;
