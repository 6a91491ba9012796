package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverRefusesAWildcardType: RecoverOptions.Types are exact event
// types, as the Events API's types[] takes them and as handlers are
// registered; "invoice.*" is refused before any request, naming the
// type. It was sent as is, and the run reported success having recovered
// none of the invoice events it was meant to.
func TestRecoverRefusesAWildcardType(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	addPaidEvents(t, f, "wildcard", 3, now)
	for _, types := range [][]string{{"invoice.*"}, {"invoice.paid", "*"}, {"customer.*.created"}} {
		rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
			Since: now.Add(-2 * time.Hour), Types: types,
		})
		require.Error(t, err, "%q: %+v", types, rep)
		require.Contains(t, err.Error(), "wildcard", types)
		require.Zero(t, rep.Requests, types)
	}
	require.Empty(t, f.calls(), "no request made")
	require.Empty(t, app.appliedOrder())
}
