package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverMalformedEventOfAConnectedAccountFailsAlone: with Account, a
// listed event that is not an event envelope (its data is not an object)
// is counted failed, as any malformed event, and the run goes on to the
// events after it: what little is read of it (its id and created) says
// nothing of its account, and is not taken for an event of another
// account. (No test failed when a malformed event went on to the
// account's check: the run stopped with ErrStripeAPI, the events after it
// never handled.)
func TestRecoverMalformedEventOfAConnectedAccountFailsAlone(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	created := now.Add(-time.Hour).Unix()
	f.add(accountEvent(t, "evt_conn_1", "acct_M", created))
	f.add(eventWith(t, accountEvent(t, "evt_conn_bad", "acct_M", created+1), "data", "not an object"))
	f.add(accountEvent(t, "evt_conn_2", "acct_M", created+2))
	app := newService(t, "memory")
	rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: now.Add(-2 * time.Hour), Account: "acct_M", RequestsPerSecond: 100,
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.RecoverReport{
		Listed: 3, Processed: 2, Failed: 1, FailedIDs: []string{"evt_conn_bad"}, Requests: 2, LastEventID: "evt_conn_1",
	}, rep)
	app.requireAppliedOnce(t, []string{"evt_conn_1", "evt_conn_2"})
}
