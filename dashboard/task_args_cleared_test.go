package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestTaskArgsClearedShown: the page of a finished task whose arguments
// Prune cleared says so, rather than that no payload is stored, and still
// shows the task done.
func TestTaskArgsClearedShown(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{ShowPayloads: true})
	id := "task:send-receipt:in_paid_1"
	_, body := f.get(t, "event?id="+id)
	contains(t, body, `id="payload"`)
	contains(t, body, "in_paid_1")

	now := f.clock.Now().Add(8 * 24 * time.Hour)
	rep, err := f.store.(idempotency.Pruner).Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.Equal(t, 2, rep.TaskArgsCleared, "%+v", rep)

	_, body = f.get(t, "event?id="+id)
	notContains(t, body, `id="payload"`)
	contains(t, body, `id="payload-cleared"`)
	notContains(t, body, "No payload stored")
	contains(t, body, `id="state">processed<`)
}
