package idempotency_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverSummaryLogsAStoppedRunAsAnError: the summary of a run the
// Events API stopped is logged at ERROR as stopped, and a run with a
// checkpoint says whether it resumed it. (No test failed when a stopped
// run's summary was logged at INFO, nor when the summary left out
// resumed.)
func TestRecoverSummaryLogsAStoppedRunAsAnError(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	now := time.Now()
	addPaidEvents(t, f, "summary_log", 1, now)
	log, buf := testLogger()
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
	require.NoError(t, err)
	opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "summary-log", RequestsPerSecond: 100}
	_, err = h.Recover(t.Context(), f.inProcess(), opts)
	require.NoError(t, err)
	f.fail = func(int, *http.Request) int { return http.StatusBadRequest }
	_, err = h.Recover(t.Context(), f.inProcess(), opts)
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)

	var summaries []map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["msg"] == "stripe recovery: done" || rec["msg"] == "stripe recovery: stopped" {
			summaries = append(summaries, rec)
		}
	}
	require.Len(t, summaries, 2)
	require.Equal(t, "INFO", summaries[0]["level"])
	require.Equal(t, "stripe recovery: done", summaries[0]["msg"])
	require.Equal(t, false, summaries[0]["resumed"])
	require.Equal(t, "ERROR", summaries[1]["level"])
	require.Equal(t, "stripe recovery: stopped", summaries[1]["msg"])
	require.Equal(t, true, summaries[1]["resumed"])
}
