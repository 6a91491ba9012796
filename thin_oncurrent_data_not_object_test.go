package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventOnCurrentDataNotObject: an OnCurrent handler of a thin
// event type is given the related object fetched from the API and never
// the event's data, so a data that is not a JSON object (a string, an
// array, a number, null) is not decoded and does not fail the event: it
// is applied with the object fetched, in inbox mode too.
func TestThinEventOnCurrentDataNotObject(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`"a text"`, `[1,2]`, `42`, `true`, `null`} {
		t.Run(data, func(t *testing.T) {
			t.Parallel()
			forEachStore(t, func(t *testing.T, app *service) {
				type meter struct{ ID string }
				var fetched []string
				idempotency.OnCurrent(app.hs, []string{thinType}, func(ctx context.Context, id, account string) (meter, error) {
					fetched = append(fetched, id)
					return meter{ID: id}, nil
				}, func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[meter]) error {
					return app.count(ctx, tx, ev.ID, nil)
				})
				f, notification, event := newThinFake("evt_thin_data")
				i := strings.Index(string(event), `"data":{`)
				j := strings.Index(string(event), `,
"changes"`)
				require.True(t, i > 0 && j > i)
				f.v2["evt_thin_data"] = []byte(string(event[:i]) + `"data":` + data + string(event[j:]))

				var res idempotency.Result
				h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
					Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
					OnResult: func(r idempotency.Result) { res = r },
				})
				require.NoError(t, err)
				a := idempotencytest.Deliver(h, notification, testSecret)
				require.NoError(t, res.Err)
				require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
				require.Equal(t, []string{thinMeter}, fetched)
				app.requireAppliedOnce(t, []string{"evt_thin_data"})

				// In inbox mode, the workers apply it as well.
				const id = "evt_thin_data_inbox"
				notification, _ = thinEvent(id)
				f.v2[id] = []byte(strings.Replace(string(f.v2["evt_thin_data"]), "evt_thin_data", id, 1))
				in, ih := app.inbox(t, f.serve(t))
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, notification, testSecret).Outcome)
				n, err := in.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
				rec, found, err := in.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, found)
				require.Empty(t, rec.LastError)
				app.requireAppliedOnce(t, []string{"evt_thin_data", id})
			})
		})
	}
}
