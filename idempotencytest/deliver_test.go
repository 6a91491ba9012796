package idempotencytest_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func TestReplayAndDeliver(t *testing.T) {
	t.Parallel()
	h, credits := newCreditHandler(t)
	payload := invoicePaid(t, "evt_replay", "in_replay", "acct_replay")
	answers := idempotencytest.Replay(h, payload, testSecret, 8)
	require.Len(t, answers, 8)
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 7, answers.Count(idempotency.OutcomeDuplicate))
	require.Equal(t, map[int]int{200: 8}, answers.Statuses())
	require.Equal(t, 100, credits.get("acct_replay"))

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, idempotencytest.Answer{Status: 200, Outcome: idempotency.OutcomeDuplicate, Body: `{"outcome":"duplicate"}`, EventID: "evt_replay"}, a)
	a = idempotencytest.Deliver(h, payload, "whsec_wrong")
	require.Equal(t, 400, a.Status)
	require.Empty(t, a.Outcome)
	require.Equal(t, 100, credits.get("acct_replay"))

	require.Empty(t, idempotencytest.Replay(h, payload, testSecret, 0))
	require.PanicsWithValue(t, "idempotencytest: Replay: n is -1; it must not be negative", func() {
		idempotencytest.Replay(h, payload, testSecret, -1)
	})
}

// TestDeliverPostsToTheRoot: Deliver and Replay send a POST to "/", the
// path their doc names, so that a router serving the handler on its route
// answers them 404, as the doc says.
func TestDeliverPostsToTheRoot(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path)
	})
	idempotencytest.Deliver(h, []byte(`{}`), testSecret)
	idempotencytest.Replay(h, []byte(`{}`), testSecret, 2)
	require.Equal(t, []string{"POST /", "POST /", "POST /"}, seen)

	h2, _ := newCreditHandler(t)
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", h2)
	a := idempotencytest.Deliver(mux, invoicePaid(t, "evt_routed", "in_routed", "acct_routed"), testSecret)
	require.Equal(t, http.StatusNotFound, a.Status)
}
