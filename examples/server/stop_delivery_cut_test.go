package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// answer is a delivery's answer, or the error of sending it.
type answer struct {
	status int
	body   string
	err    error
}

// TestRunStopCutsADeliveryAtItsDeadline: a synchronous delivery whose
// handler is blocked on the Stripe API (a subscription's fetch, which the
// API answers only once the request is cancelled) when the stop's
// deadline for deliveries passes is cut then: its fetch is cancelled, it
// fails (answered 503 on its connection, still open), its transaction
// rolls back, and run returns only after it has, the store closed after
// it: its log line comes before the stopped line, which says
// in_flight_finished=false; on PostgreSQL no row is written and no
// "closed pool" is logged. Both stores. http.Server.Shutdown returned at
// its deadline while the handler ran on, until FetchTimeout, as the store
// and its pool closed under it.
func TestRunStopCutsADeliveryAtItsDeadline(t *testing.T) {
	old := deliveriesGrace
	deliveriesGrace = 100 * time.Millisecond
	t.Cleanup(func() { deliveriesGrace = old })
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			fetching, cut := make(chan struct{}, 1), make(chan struct{}, 1)
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fetching <- struct{}{}
				<-r.Context().Done() // the client cancelled its request
				cut <- struct{}{}
			}))
			t.Cleanup(api.Close)
			env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret, "STRIPE_SECRET_KEY": fakeKey}
			args := []string{"-addr", "127.0.0.1:0", "-stripe-api-base", api.URL}
			var db *pgtest.DB
			if kind == "postgres" {
				db = pgtest.New(t)
				args = append(args, "-database-url", db.URL)
			}
			logs := newLogWatch("msg=stopping")
			addr, stop := startRun(t, args, func(k string) string { return env[k] }, logs)

			req := idempotencytest.NewSignedRequest("http://"+addr+"/webhook",
				subscriptionEvent(t, "evt_cut", "customer.subscription.updated", "sub_cut", "", subCreated, "active"), secret)
			req.RequestURI = ""
			answered := make(chan answer, 1)
			go func() {
				resp, err := testClient.Do(req)
				if err != nil {
					answered <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				answered <- answer{status: resp.StatusCode, body: strings.TrimSpace(string(body)), err: err}
			}()
			recv(t, fetching, "the delivery's fetch")

			require.NoError(t, stop())
			recv(t, cut, "the fetch cancelled")
			a := recv(t, answered, "the delivery's answer")
			require.NoError(t, a.err)
			require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
			require.Equal(t, `{"error":"stripe_unavailable"}`, a.body)
			require.Regexp(t, `level=INFO msg=stopping cause="context canceled"\n`+
				`(?:.*\n)*.*level=ERROR msg="stripe webhook" outcome=failed status=503 .*event_id=evt_cut .*context canceled.*\n`+
				`(?:.*\n)*.*level=INFO msg=stopped took=[0-9.]+m?s in_flight_finished=false\n$`, logs.String())
			require.NotContains(t, logs.String(), "closed pool")
			if db != nil {
				var rows int
				require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM subscriptions`).Scan(&rows))
				require.Zero(t, rows, "the cut delivery rolled back")
			}
		})
	}
}

// recv receives from ch, or fails the test after 30 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing within 30 s", what)
		panic("unreachable")
	}
}

// TestRequestsWaitForThoseRunning: requests.wait returns once the
// requests running have returned, and a request that begins after wait
// has begun (its headers read as the stop's deadline passed) is answered
// 503 without running, the store closing after wait.
func TestRequestsWaitForThoseRunning(t *testing.T) {
	t.Parallel()
	var q requests
	entered, release := make(chan struct{}), make(chan struct{})
	h := q.handle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	serve := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	slow := make(chan int, 1)
	go func() { slow <- serve("/slow") }()
	recv(t, entered, "the slow request")
	require.Equal(t, http.StatusNoContent, serve("/fast"), "before wait, a request runs")

	waited := make(chan struct{})
	go func() {
		q.wait()
		close(waited)
	}()
	require.Eventually(t, func() bool { return serve("/fast") == http.StatusServiceUnavailable }, 10*time.Second, time.Millisecond,
		"a request after wait began is refused")
	select {
	case <-waited:
		t.Fatal("wait returned while a request ran")
	default:
	}
	close(release)
	require.Equal(t, http.StatusNoContent, recv(t, slow, "the slow request's answer"))
	recv(t, waited, "wait")
}

// TestBaseContextIsCutWithTheRequests: the server's base context, which
// every request's context derives from, is done once the requests are cut
// at the deliveries' deadline, so that any handler still running (not
// only a subscription's fetch, which reads the cut as a value) sees its
// request's context done; and it carries the cut for cutAtStop.
func TestBaseContextIsCutWithTheRequests(t *testing.T) {
	t.Parallel()
	cut, cutRequests := context.WithCancel(context.Background())
	defer cutRequests()
	ctx := baseContext(cut)
	require.NoError(t, ctx.Err())
	require.Equal(t, cut, ctx.Value(requestsCut{}))
	cutRequests()
	require.ErrorIs(t, ctx.Err(), context.Canceled, "a request's context is done once the requests are cut")
}
