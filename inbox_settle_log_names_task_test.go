package idempotency_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// logRecordsWith returns the JSON log records of logs whose msg holds
// msg.
func logRecordsWith(t *testing.T, logs *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var found []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if m, _ := rec["msg"].(string); strings.Contains(m, msg) {
			found = append(found, rec)
		}
	}
	return found
}

// requireNamesTask requires rec to name task send-receipt id as every
// other line about a task does (task_id, task), not as an event.
func requireNamesTask(t *testing.T, rec map[string]any, id string) {
	t.Helper()
	require.Equal(t, id, rec["task_id"], "%v", rec)
	require.Equal(t, "send-receipt", rec["task"], "%v", rec)
	require.NotContains(t, rec, "event_id", "a task is not an event")
}

// TestInboxLeaseLostLogNamesTheTask: the Warn line of an attempt at a task
// whose lease a newer attempt took over names the task by task_id and
// task, as the inbox's other lines about a task do (the attempt's end,
// the take-over's "attempting, alone"). It named the task's id event_id,
// so an operator following a task by task_id missed it. Both stores.
func TestInboxLeaseLostLogNamesTheTask(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logger, logs := testLogger()
			res := taskAttemptAfterTakeoverLogged(t, store, func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil }, logger)
			require.ErrorIs(t, res.Err, idempotency.ErrLeaseLost)
			lost := logRecordsWith(t, logs, "no longer held at this attempt")
			require.Len(t, lost, 1, logs.String())
			requireNamesTask(t, lost[0], "task:send-receipt:in_hung")
			require.Equal(t, float64(1), lost[0]["attempt"])
		})
	}
}
