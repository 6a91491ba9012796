package idempotency_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// recv returns the next value of ch, failing the test after 10 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10 s", what)
		panic("unreachable")
	}
}

// Run's shutdown: once its context is done it takes no new event, lets an
// attempt in flight finish within ShutdownTimeout, and cancels one that
// does not; that one rolls back, is recorded failed, and the next Run
// applies it. OnResult sees every attempt with its number.
func TestInboxRunShutsDownGracefully(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	started := make(chan string, 4)
	release := make(chan struct{})
	var slowRespectsRelease bool
	var mu sync.Mutex
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		started <- ev.ID
		mu.Lock()
		waitRelease := ev.ID == "evt_quick" || slowRespectsRelease
		mu.Unlock()
		if waitRelease {
			<-release
			return nil
		}
		<-ctx.Done() // a handler stuck on a downstream until it is cancelled
		return ctx.Err()
	})
	var results []idempotency.Result
	var resultsMu sync.Mutex
	newInbox := func() *idempotency.Inbox {
		in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
			Workers: 2, Timeout: 5 * time.Second, Lease: 10 * time.Second, ShutdownTimeout: 100 * time.Millisecond,
			Backoff: func(int) time.Duration { return 0 },
			Logger:  slog.New(slog.DiscardHandler),
			OnResult: func(r idempotency.Result) {
				resultsMu.Lock()
				defer resultsMu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		return in
	}
	inbox := newInbox()
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	runDone := make(chan error, 1)
	go func() { runDone <- inbox.Run(ctx) }()
	for _, id := range []string{"evt_quick", "evt_slow"} {
		a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	}
	got := map[string]bool{recv(t, started, "the first attempt"): true, recv(t, started, "the second attempt"): true}
	require.Equal(t, map[string]bool{"evt_quick": true, "evt_slow": true}, got)

	stop()
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_late", "in_late", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "the webhook still stores")
	close(release) // evt_quick finishes within ShutdownTimeout; evt_slow does not
	require.NoError(t, recv(t, runDone, "Run after its context was cancelled"))

	list := func() map[string]idempotency.InboxRecord {
		recs, err := inbox.List(t.Context(), idempotency.InboxFilter{})
		require.NoError(t, err)
		m := map[string]idempotency.InboxRecord{}
		for _, r := range recs {
			m[r.EventID] = r
		}
		return m
	}
	recs := list()
	require.Equal(t, idempotency.InboxProcessed, recs["evt_quick"].State)
	require.Equal(t, idempotency.InboxFailed, recs["evt_slow"].State, "cancelled at the deadline, rolled back, recorded")
	require.Contains(t, recs["evt_slow"].LastError, "context canceled")
	require.Equal(t, idempotency.InboxPending, recs["evt_late"].State, "no new event taken after the stop")
	_, claimed, err := store.LookupGuard(t.Context(), "invoice-credit", "in_evt_slow")
	require.NoError(t, err)
	require.False(t, claimed, "the cancelled attempt's writes rolled back")

	// The next worker applies both.
	mu.Lock()
	slowRespectsRelease = true
	mu.Unlock()
	ctx2, stop2 := context.WithCancel(t.Context())
	defer stop2()
	next := newInbox()
	go func() { runDone <- next.Run(ctx2) }()
	got = map[string]bool{recv(t, started, "the retry"): true, recv(t, started, "the late event"): true}
	require.Equal(t, map[string]bool{"evt_slow": true, "evt_late": true}, got)
	require.Eventually(t, func() bool {
		r := list()
		return r["evt_slow"].State == idempotency.InboxProcessed && r["evt_late"].State == idempotency.InboxProcessed
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 2, list()["evt_slow"].Attempt)
	stop2()
	require.NoError(t, recv(t, runDone, "the second Run"))

	resultsMu.Lock()
	defer resultsMu.Unlock()
	attempts := map[string][]int{}
	for _, r := range results {
		attempts[r.EventID] = append(attempts[r.EventID], r.Attempt)
	}
	require.Equal(t, map[string][]int{"evt_quick": {1}, "evt_slow": {1, 2}, "evt_late": {1}}, attempts)
}

// A second Run on one Inbox is refused; NewInbox refuses what it cannot
// serve and names the field at fault.
func TestNewInboxRefusesMisuse(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	for _, tc := range []struct {
		cfg  idempotency.InboxConfig
		want string
	}{
		{idempotency.InboxConfig{Workers: -1}, "InboxConfig.Workers"},
		{idempotency.InboxConfig{MaxAttempts: -1}, "InboxConfig.MaxAttempts"},
		{idempotency.InboxConfig{Timeout: -time.Second}, "InboxConfig.Timeout"},
		{idempotency.InboxConfig{Timeout: time.Minute, Lease: time.Minute}, "InboxConfig.Lease"},
		{idempotency.InboxConfig{PollInterval: -1}, "InboxConfig.PollInterval"},
	} {
		_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := idempotency.NewInbox((*idempotency.MemoryStore)(nil), hs, idempotency.InboxConfig{})
	require.ErrorContains(t, err, "nil Store")
	_, err = idempotency.NewInbox(idempotency.NewMemoryStore(), nil, idempotency.InboxConfig{})
	require.Error(t, err)
	_, err = idempotency.NewInbox(storeWithoutInbox{idempotency.NewMemoryStore()}, hs, idempotency.InboxConfig{})
	require.ErrorContains(t, err, "does not support the inbox")

	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	// Once an event is processed, Run is running.
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_run", "in_run", "acct_1"), testSecret).Outcome)
	require.Eventually(t, func() bool {
		recs, err := in.List(t.Context(), idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxProcessed}})
		return err == nil && len(recs) == 1
	}, 10*time.Second, time.Millisecond)
	require.ErrorContains(t, in.Run(ctx), "already running")
	stop()
	require.NoError(t, recv(t, done, "Run"))
}

// storeWithoutInbox is a Store of a third party's: the contract only.
type storeWithoutInbox struct{ s *idempotency.MemoryStore }

func (s storeWithoutInbox) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	return s.s.Run(ctx, c, apply)
}
func (s storeWithoutInbox) Ping(ctx context.Context) error { return s.s.Ping(ctx) }
