package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverEachPageStartsAfterTheNewestOfThePageBefore: walking newer
// from the oldest page, each request's ending_before is the newest event
// of the page before it, so that the run ends after as many pages as the
// events fill. A walk that asked with the same cursor again listed the
// same page for as long as its context lasted; the run here is cut short
// after twice the requests it needs, and fails with a message.
func TestRecoverEachPageStartsAfterTheNewestOfThePageBefore(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 60)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The search for the oldest page and the 5 or 6 pages after it need
	// fewer.
	const enough = 40
	o.f.fail = func(n int, _ *http.Request) int { // o.f.mu is held
		if n > enough {
			cancel()
		}
		return 0
	}
	opts := o.opts
	opts.PageSize, opts.RequestsPerSecond = 10, 100
	rep, err := app.handler(t).Recover(ctx, o.client, opts)
	require.NoError(t, err, "the walk made more than %d requests: %+v", enough, rep)
	require.Equal(t, 60, rep.Listed)
	app.requireAppliedOnce(t, o.handled)

	calls := o.f.calls()
	walked := 0
	for i, c := range calls {
		if cursor := c.Query.Get("ending_before"); cursor != "" {
			walked++
			require.NotEmpty(t, calls[i-1].Listed, "request %d", i-1)
			require.Equal(t, calls[i-1].Listed[0], cursor, "request %d starts after the newest event of the page before", i)
		}
	}
	require.GreaterOrEqual(t, walked, 5, "the pages after the oldest")
}
