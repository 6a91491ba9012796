package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverMoreThanAPageAllInTheNewestSecond: when every event since
// Since was created in one second, the newest listed, and they fill more
// than a page, the search for the oldest page pages through that second:
// its window must take the second in ([Since, second+1)). A window that
// ended at the second found no event and started the search again, for as
// long as the context lasted; the run here is cut short after 40
// requests, and fails with a message.
func TestRecoverMoreThanAPageAllInTheNewestSecond(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	second := now.Add(-time.Hour).Unix()
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("evt_newest_second_%02d", i)
		f.add(snapshotEvent(t, id, "invoice.paid", "in_"+id, second))
		all = append(all, id)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const enough = 40
	f.fail = func(n int, _ *http.Request) int { // f.mu is held
		if n > enough {
			cancel()
		}
		return 0
	}
	rep, err := app.handler(t).Recover(ctx, client, idempotency.RecoverOptions{
		Since: now.Add(-2 * time.Hour), PageSize: 10, RequestsPerSecond: 100,
	})
	require.NoError(t, err, "more than %d requests: %+v", enough, rep)
	require.Equal(t, 25, rep.Processed)
	require.Equal(t, all, app.appliedOrder())
}
