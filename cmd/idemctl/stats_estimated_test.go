package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestStatsMarksEstimatedCounts: stats writes a count the store estimated
// (InboxStats.Estimated) with "~" before it, and -json lists its state
// under "estimated", absent when every count is exact.
func TestStatsMarksEstimatedCounts(t *testing.T) {
	t.Parallel()
	st := idempotency.InboxStats{
		Counts:     map[idempotency.InboxState]int{idempotency.InboxPending: 4, idempotency.InboxProcessed: 1200000},
		TaskCounts: map[idempotency.InboxState]int{idempotency.InboxPending: 1, idempotency.InboxProcessed: 480000},
		Estimated:  map[idempotency.InboxState]bool{idempotency.InboxProcessed: true},
	}
	var out bytes.Buffer
	a := &app{stdout: &out, now: time.Now}
	require.NoError(t, a.writeStats(st, false))
	require.Regexp(t, `(?m)^processed +~720000 +~480000$`, out.String())
	require.Regexp(t, `(?m)^pending +3 +1$`, out.String())

	out.Reset()
	require.NoError(t, a.writeStats(st, true))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, []any{"processed"}, doc["estimated"])

	out.Reset()
	st.Estimated = nil
	require.NoError(t, a.writeStats(st, true))
	require.NotContains(t, out.String(), "estimated")
}
