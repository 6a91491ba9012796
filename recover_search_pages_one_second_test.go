package idempotency_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverSearchPagesOnlyTheFirstSecond: when more than a page of
// events share the oldest second, the search for the oldest page pages to
// the end of that second's list alone (created[lt] the second after it),
// not through the events of the seconds after it, which the walk lists
// anyway. (No test failed when it paged the second after it too: every
// event was still applied once, with more requests.)
func TestRecoverSearchPagesOnlyTheFirstSecond(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	first := now.Add(-time.Hour).Unix()
	var all []string
	for _, created := range []int64{first, first, first, first + 1, first + 1, first + 1, first + 100, first + 100, first + 100} {
		id := fmt.Sprintf("evt_second_%d", len(all))
		f.add(snapshotEvent(t, id, "invoice.paid", "in_"+id, created))
		all = append(all, id)
	}
	app := newService(t, "memory")
	rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: now.Add(-2 * time.Hour), PageSize: 2, RequestsPerSecond: 100,
	})
	require.NoError(t, err)
	require.Equal(t, 9, rep.Processed, "%+v", rep)
	require.Equal(t, all, app.appliedOrder())
	paged := 0
	for _, call := range f.calls() {
		if call.Query.Get("starting_after") != "" {
			paged++
			require.Equal(t, strconv.FormatInt(first+1, 10), call.Query.Get("created[lt]"), "paging within the first second")
		}
	}
	require.Equal(t, 1, paged, "three events of the first second: two pages")
}
