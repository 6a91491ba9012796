package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverRefusesATypeNoEventHas: a RecoverOptions.Types entry with
// white space, a control character or a comma (a list split wrongly, a
// line read from an env file) is no Stripe event's type: it is refused
// before any request, as On refuses it. It was sent as is, and the run
// reported success having listed none of the events meant, and a
// checkpoint of "a,b" passed for one of ["a", "b"].
func TestRecoverRefusesATypeNoEventHas(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	addPaidEvents(t, f, "text", 3, now)
	for _, typ := range []string{"invoice.paid ", " invoice.paid", "invoice.paid\n", "invoice.paid,customer.created", "invoice\tpaid"} {
		rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
			Since: now.Add(-2 * time.Hour), Types: []string{typ},
		})
		require.Error(t, err, "%q: %+v", typ, rep)
		require.Contains(t, err.Error(), "RecoverOptions.Types[0]", typ)
		require.Zero(t, rep.Requests, typ)
	}
	require.Empty(t, f.calls(), "no request made")
	require.Empty(t, app.appliedOrder())
}
