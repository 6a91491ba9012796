package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// recvWait is how long recv waits: what the tests wait for through it
// (a handler reaching a channel, a delivery's answer, a Run or a
// recovery returning, on PostgreSQL or through a fault) can take seconds
// on a loaded machine; a test that works waits no longer for it.
const recvWait = 30 * time.Second

// recv returns the next value of ch, failing the test after recvWait.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return recvWithin(t, ch, recvWait, what)
}

// recvWithin is recv waiting up to within: for a value that comes after
// many steps (events applied one after another), which a loaded machine
// can take longer for than recvWait, a wait for one.
func recvWithin[T any](t *testing.T, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("%s: nothing within %s; the library's goroutines:\n%s", what, within, libraryStacks())
		panic("unreachable")
	}
}

// libraryStacks is the stacks of the goroutines that run the library's
// code, for the message of a test whose wait ran out: where a delivery,
// an attempt or a look-up is stuck. The tests' own frames are of the
// idempotency_test package, and a goroutine with none of the library's
// is left out. Those the calling test started come first (ownStacksFirst).
func libraryStacks() string {
	var all strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2) // every goroutine's stack, as a crash prints them
	self := make([]byte, 64)
	self = self[:runtime.Stack(self, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(self), "goroutine "), " ")
	return ownStacksFirst(all.String(), id)
}

// ownStacksFirst returns the goroutines of dump (stacks as a crash prints
// them) that run the library's code: first those that goroutine self
// started, or one of them did, the calling test's own; then the others:
// those of the tests that run beside it, and any whose line to the test
// is lost (its creator has exited, or it runs a timer's func, created by
// whichever goroutine ran the timer). A long failure message is cut in
// the middle, and in CI the other tests' stacks had pushed the stuck
// delivery's there.
func ownStacksFirst(dump, self string) string {
	type goroutine struct{ id, parent, stack string }
	var gs []goroutine
	for stack := range strings.SplitSeq(strings.TrimSpace(dump), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
		_, parent, _ := strings.Cut(stack, "\ncreated by ")
		_, parent, _ = strings.Cut(parent, " in goroutine ")
		parent, _, _ = strings.Cut(parent, "\n")
		gs = append(gs, goroutine{id, parent, stack})
	}
	own := map[string]bool{self: true}
	for grew := true; grew; {
		grew = false
		for _, g := range gs {
			if own[g.parent] && !own[g.id] {
				own[g.id], grew = true, true
			}
		}
	}
	var mine, others []string
	for _, g := range gs {
		switch {
		case !strings.Contains(g.stack, "github.com/seed-a84bb619/idempotency."):
		case own[g.id]:
			mine = append(mine, g.stack)
		default:
			others = append(others, g.stack)
		}
	}
	if len(mine)+len(others) == 0 {
		return "(none)"
	}
	return "the test's own:\n" + orNone(mine) + othersHeading + orNone(others)
}

// othersHeading heads, in ownStacksFirst's text, the stacks that are not
// the calling test's own.
const othersHeading = "\n\nthe others (other tests', or whose creator has exited):\n"

// orNone is stacks, a blank line apart, or "(none)".
func orNone(stacks []string) string {
	if len(stacks) == 0 {
		return "(none)"
	}
	return strings.Join(stacks, "\n\n")
}

// Run's shutdown: once its context is done it takes no new event, lets an
// attempt in flight finish within ShutdownTimeout, and cancels one that
// does not, and says so (ErrShutdownTimeout); that one rolls back, is
// recorded failed, and the next Run applies it. OnResult sees every
// attempt with its number. On the fake clock of a synctest bubble: on the
// real one, evt_quick's commit raced ShutdownTimeout, and the delivery and
// the stop before it raced evt_slow's Timeout, on a loaded machine.
func TestInboxRunShutsDownGracefully(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
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
				// evt_quick finishes within ShutdownTimeout after the stop,
				// with a delivery in between; evt_slow waits it out, and is
				// cut then, before its own Timeout.
				Workers: 2, Timeout: 5 * time.Second, Lease: 10 * time.Second, ShutdownTimeout: 2 * time.Second,
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
		err = recv(t, runDone, "Run after its context was cancelled")
		require.ErrorIs(t, err, idempotency.ErrShutdownTimeout)
		require.ErrorContains(t, err, ": 1 attempt, 2s after the stop", "evt_slow alone was cut")

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
	})
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
		{idempotency.InboxConfig{ShutdownTimeout: -1}, "InboxConfig.ShutdownTimeout"},
		{idempotency.InboxConfig{IngestWorkers: -1}, "InboxConfig.IngestWorkers is negative"},
		{idempotency.InboxConfig{Workers: 4, IngestWorkers: 5}, "InboxConfig.IngestWorkers (5) exceeds Workers (4)"},
		{idempotency.InboxConfig{MaxIngestLag: -time.Second}, "InboxConfig.MaxIngestLag"},
		{idempotency.InboxConfig{RetryUnhandledFor: -time.Second}, "InboxConfig.RetryUnhandledFor is negative"},
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

// A panic, a timeout and a decode error each fail an attempt like an
// error does: writes rolled back, the attempt recorded with a bounded,
// valid last error that never quotes the payload.
func TestInboxAttemptFailures(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if _, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID); err != nil {
			return err
		}
		switch ev.ID {
		case "evt_panic":
			panic("nil map in the handler")
		case "evt_timeout":
			<-ctx.Done()
			return ctx.Err()
		case "evt_long":
			return errors.New(strings.Repeat("é", 3000)) // 6000 bytes
		}
		return nil
	})
	idempotency.On(hs, "invoice.payment_succeeded", func(context.Context, idempotency.Tx, idempotency.Event[struct {
		AmountDue string `json:"amount_due"` // a number in the payload
	}]) error {
		return nil
	})
	// The timeout's attempt runs on an inbox of its own, whose short
	// Timeout it waits out: the others' attempts, side by side on a loaded
	// machine, could run into 50 ms before they failed on their own.
	work := func(timeout time.Duration, payloads ...[]byte) *idempotency.Inbox {
		t.Helper()
		inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
			Now: clock.Now, Timeout: timeout, Lease: time.Minute, Logger: slog.New(slog.DiscardHandler),
		})
		require.NoError(t, err)
		h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		for _, p := range payloads {
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, p, testSecret).Outcome)
		}
		n, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, len(payloads), n)
		return inbox
	}
	inbox := work(idempotency.DefaultInboxTimeout,
		invoicePayload(t, "evt_panic", "in_panic", "acct_1"),
		invoicePayload(t, "evt_long", "in_long", "acct_1"),
		eventPayload(t, "invoice.payment_succeeded", "evt_decode", map[string]string{"account_id": "acct_secret_value"}))
	work(50*time.Millisecond, invoicePayload(t, "evt_timeout", "in_timeout", "acct_1"))

	lastError := func(id string) string {
		r, ok, err := inbox.Lookup(t.Context(), id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxFailed, r.State, id)
		require.Equal(t, 1, r.Attempt)
		return r.LastError
	}
	require.Contains(t, lastError("evt_panic"), "handler panicked: nil map in the handler")
	require.Contains(t, lastError("evt_timeout"), "idempotency: timed out after 50ms (the handler's transaction, InboxConfig.Timeout)")
	long := lastError("evt_long")
	require.LessOrEqual(t, len(long), 1000, "bounded")
	require.True(t, utf8.ValidString(long), "cut on a rune boundary")
	decodeErr := lastError("evt_decode")
	require.Contains(t, decodeErr, "amount_due")
	require.NotContains(t, decodeErr, "2000", "no payload value")
	require.NotContains(t, decodeErr, "acct_secret_value")
	for _, key := range []string{"in_panic", "in_timeout", "in_long"} {
		_, claimed, err := store.LookupGuard(t.Context(), "invoice-credit", key)
		require.NoError(t, err)
		require.False(t, claimed, "the failed attempt's writes rolled back")
	}
}

// Redrive selects by time range and state; failed events can be redriven
// too, with a fresh budget.
func TestInboxRedriveFilters(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		return errors.New("down")
	})
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now: clock.Now, MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Hour }, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	t0 := clock.Now()
	for _, id := range []string{"evt_r1", "evt_r2", "evt_r3"} {
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret).Outcome)
		clock.Advance(time.Minute)
	}
	_, err = inbox.WorkDue(t.Context()) // attempt 1 of each: failed
	require.NoError(t, err)
	clock.Advance(time.Hour)
	_, err = inbox.WorkDue(t.Context()) // attempt 2: dead letter
	require.NoError(t, err)

	n, err := inbox.Redrive(t.Context(), idempotency.RedriveFilter{Since: t0.Add(time.Minute), Until: t0.Add(2 * time.Minute), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n, "only evt_r2 was received in that minute")
	n, err = inbox.Redrive(t.Context(), idempotency.RedriveFilter{Since: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for id, want := range map[string]idempotency.InboxState{"evt_r1": idempotency.InboxDeadLetter, "evt_r2": idempotency.InboxPending, "evt_r3": idempotency.InboxPending} {
		r, _, err := inbox.Lookup(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want, r.State, id)
	}
	_, err = inbox.WorkDue(t.Context()) // evt_r2, evt_r3 fail again: failed, attempt 1
	require.NoError(t, err)
	n, err = inbox.Redrive(t.Context(), idempotency.RedriveFilter{States: []idempotency.InboxState{idempotency.InboxFailed}})
	require.NoError(t, err)
	require.Equal(t, 2, n, "failed events can be redriven: due now, fresh budget")
	r, _, err := inbox.Lookup(t.Context(), "evt_r3")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt)
}

// The defaults of InboxConfig, ShutdownTimeout following Timeout whether
// Timeout is set or defaulted.
func TestInboxConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := idempotency.InboxConfigWithDefaults(idempotency.InboxConfig{})
	require.NoError(t, err)
	require.Equal(t, idempotency.DefaultWorkers, cfg.Workers)
	require.Equal(t, idempotency.DefaultMaxAttempts, cfg.MaxAttempts)
	require.Equal(t, idempotency.DefaultInboxTimeout, cfg.Timeout)
	require.Equal(t, idempotency.DefaultLease, cfg.Lease)
	require.Equal(t, idempotency.DefaultPollInterval, cfg.PollInterval)
	require.Equal(t, idempotency.DefaultInboxTimeout, cfg.ShutdownTimeout, "ShutdownTimeout defaults to Timeout")
	require.Equal(t, idempotency.DefaultWorkers/2, cfg.IngestWorkers, "IngestWorkers defaults to half the Workers")
	require.Equal(t, idempotency.DefaultMaxIngestLag, cfg.MaxIngestLag)
	require.Equal(t, idempotency.DefaultRetryUnhandledFor, cfg.RetryUnhandledFor)
	require.NotNil(t, cfg.Backoff)
	require.NotNil(t, cfg.Now)
	cfg, err = idempotency.InboxConfigWithDefaults(idempotency.InboxConfig{Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, cfg.ShutdownTimeout)
	cfg, err = idempotency.InboxConfigWithDefaults(idempotency.InboxConfig{Workers: 1})
	require.NoError(t, err)
	require.Equal(t, 1, cfg.IngestWorkers, "at least one worker applies")
}

// DefaultBackoff waits n⁴ seconds ±10% after attempt n, and the longest
// time.Duration once n⁴ seconds is longer: never a negative wait (which
// would retry at once), however large MaxAttempts is.
func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	require.Zero(t, idempotency.DefaultBackoff(0))
	for n := 1; n <= 2000; n++ {
		want := math.Pow(float64(n), 4) * float64(time.Second)
		d := idempotency.DefaultBackoff(n)
		require.GreaterOrEqual(t, float64(d), min(0.9*want, math.MaxInt64), "after attempt %d", n)
		require.LessOrEqual(t, float64(d), 1.1*want, "after attempt %d", n)
	}
	require.Equal(t, time.Duration(math.MaxInt64), idempotency.DefaultBackoff(math.MaxInt))
}

// While the process's Handler stores deliveries, only IngestWorkers of the
// Workers apply events; once deliveries stop, or once an event taken has
// been due for longer than MaxIngestLag, all of them do. The fake clock
// says when the last delivery came and how long events waited; channels
// hold each handler until the test lets it go, so the test sees exactly
// how many run at once, on either store.
func TestInboxIngestWorkers(t *testing.T) {
	t.Parallel()
	stores := map[string]func() idempotency.Store{
		"memory":   func() idempotency.Store { return idempotency.NewMemoryStore() },
		"postgres": func() idempotency.Store { return newPgBackend(t, idempotency.PgxConfig{}).store },
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var active, most atomic.Int32
			entered := make(chan string, 16)
			release := make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				n := active.Add(1)
				defer active.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				entered <- ev.ID
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			inbox, err := idempotency.NewInbox(newStore(), hs, idempotency.InboxConfig{
				Workers: 4, IngestWorkers: 1, MaxIngestLag: 10 * time.Second, Now: clock.Now, Logger: discardLogger(),
				PollInterval: time.Hour, PollOnly: true, // only the quiet timer lifts the limit
			})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			deliver := func(ids ...string) {
				for _, id := range ids {
					res := idempotencytest.Deliver(h, invoicePayload(t, "evt_"+id, "in_"+id, "acct_1"), testSecret)
					require.Equal(t, idempotency.OutcomeQueued, res.Outcome)
				}
			}
			run := func() (stop func(), done <-chan error) {
				ctx, cancel := context.WithCancel(t.Context())
				ch := make(chan error, 1)
				go func() { ch <- inbox.Run(ctx) }()
				return cancel, ch
			}
			stopRun := func(stop func(), done <-chan error) {
				stop()
				require.NoError(t, recv(t, done, "Run"))
			}
			// together waits for n more attempts to start, checks that
			// want handlers then run at once, and lets them all go.
			together := func(n int, want int32, what string) {
				for range n {
					recv(t, entered, what)
				}
				require.EqualValues(t, want, active.Load(), what)
				for range want {
					release <- struct{}{}
				}
			}

			// Deliveries just came (the clock stands still): one worker
			// applies, the events after each other, and the others wait
			// without holding any: what is leased ahead waits in the
			// queue, twice IngestWorkers long.
			idle := func() {
				require.Eventually(t, func() bool { return idempotency.InboxIdle(inbox) }, 10*time.Second, time.Millisecond)
			}
			deliver("a1", "a2", "a3", "a4", "a5", "a6")
			stop, done := run()
			for i := range 3 {
				recv(t, entered, "an attempt while deliveries come")
				require.EqualValues(t, 1, active.Load())
				if i == 0 {
					idle()
					st, err := inbox.Stats(t.Context())
					require.NoError(t, err)
					require.Equal(t, 3, st.Counts[idempotency.InboxProcessing], "the attempt and the two queued: none held by a waiting worker")
				}
				release <- struct{}{}
			}
			recv(t, entered, "the fourth attempt")
			idle()
			require.EqualValues(t, 1, most.Load(), "one worker applies while deliveries come")

			// No delivery for a second: nothing wakes Run but the end of
			// the quiet, and the last two events run beside the fourth.
			clock.Advance(time.Second)
			together(2, 3, "all workers apply once deliveries stop")
			stopRun(stop, done)

			// Four events have waited for longer than MaxIngestLag when a
			// fifth comes: all workers apply though deliveries come.
			deliver("b1", "b2", "b3", "b4")
			clock.Advance(11 * time.Second)
			deliver("b5")
			stop, done = run()
			together(4, 4, "all workers apply once events lag")
			recv(t, entered, "b5's attempt")
			release <- struct{}{}
			stopRun(stop, done)

			// Stopped while the limit holds workers back: the attempt in
			// flight finishes, and the events leased ahead are given back
			// pending, their attempt not counted.
			deliver("c1", "c2", "c3", "c4")
			stop, done = run()
			first := recv(t, entered, "an attempt before the stop")
			stop()
			release <- struct{}{}
			require.NoError(t, recv(t, done, "Run"))
			for _, id := range []string{"evt_c1", "evt_c2", "evt_c3", "evt_c4"} {
				r, found, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, found)
				if id == first {
					require.Equal(t, idempotency.InboxProcessed, r.State)
					continue
				}
				require.Equal(t, idempotency.InboxPending, r.State, id)
				require.Zero(t, r.Attempt, id)
				require.True(t, r.AttemptedAt.IsZero(), "%s: given back before any attempt, yet AttemptedAt = %s", id, r.AttemptedAt)
			}

			// Once deliveries stopped, the events given back are applied by
			// all workers.
			clock.Advance(time.Second)
			stop, done = run()
			together(3, 3, "the events given back, once deliveries stopped")
			stopRun(stop, done)

			// Deliveries come while Run waits with nothing to do, every
			// worker inside the gate and waiting for an event: those
			// waiting step out, and again one worker applies.
			stop, done = run()
			require.Eventually(t, func() bool {
				active, limit := idempotency.InboxGate(inbox)
				return active == 4 && limit == 4 && idempotency.InboxIdle(inbox)
			}, 10*time.Second, time.Millisecond, "every worker waits inside the gate")
			most.Store(0)
			deliver("d1", "d2", "d3", "d4")
			for i := range 4 {
				recv(t, entered, "an attempt once deliveries came")
				if i == 0 {
					require.Eventually(t, func() bool {
						active, limit := idempotency.InboxGate(inbox)
						return active == 1 && limit == 1
					}, 10*time.Second, time.Millisecond, "the waiting workers stepped out")
				}
				require.EqualValues(t, 1, most.Load(), "one worker applies while deliveries come")
				release <- struct{}{}
			}
			stopRun(stop, done)

			st, err := inbox.Stats(t.Context())
			require.NoError(t, err)
			require.Equal(t, 19, st.Counts[idempotency.InboxProcessed])
		})
	}
}

// A worker stalled since before a redrive holds a lease with the same
// attempt number as the lease taken after it: the fence tells them apart by
// the lease's time, so the stale worker can neither record its attempt nor
// apply the event, on either store.
func TestInboxStaleLeaseAcrossRedrive(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var runs sync.Map
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				n, _ := runs.LoadOrStore(ev.ID, new(int))
				*n.(*int)++
				return nil
			})
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, MaxAttempts: 1, Lease: time.Minute, Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler),
			})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_stall", "in_stall", "acct_1"), testSecret).Outcome)

			stale, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // this worker stalls
			require.NoError(t, err)
			require.Len(t, stale, 1)
			clock.Advance(time.Minute)
			n, err := inbox.WorkDue(t.Context()) // the expired lease at the last attempt: dead letter
			require.NoError(t, err)
			require.Zero(t, n)
			redriven, err := inbox.Redrive(t.Context(), idempotency.RedriveFilter{})
			require.NoError(t, err)
			require.Equal(t, 1, redriven)
			clock.Advance(time.Second)
			fresh, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
			require.NoError(t, err)
			require.Len(t, fresh, 1)
			require.Equal(t, stale[0].Attempt(), fresh[0].Attempt(), "the redrive numbers the new lease alike")

			ok, err := idempotency.SettleLeased(t.Context(), inbox, stale[0], idempotency.InboxDeadLetter, "stale")
			require.NoError(t, err)
			require.False(t, ok, "the stalled worker cannot record over the new lease")
			idempotency.ApplyLeased(t.Context(), inbox, stale[0])
			_, ran := runs.Load("evt_stall")
			require.False(t, ran, "the stalled worker cannot apply the event either")

			idempotency.ApplyLeased(t.Context(), inbox, fresh[0])
			r, _, err := inbox.Lookup(t.Context(), "evt_stall")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, r.State)
			n2, _ := runs.Load("evt_stall")
			require.Equal(t, 1, *n2.(*int))
		})
	}
}

// An event given back unapplied (Run stopping, or too little of its lease
// left) shows the attempt before the lease: its number, its time (zero
// before the first), its error and the state it left (pending before the
// first, failed after a failure), on either store.
func TestInboxGiveBackShowsTheAttemptBefore(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clock := idempotencytest.NewClock(start)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_back", "in_back", "acct_1"), testSecret).Outcome)
			lease := func() idempotency.InboxLeased {
				t.Helper()
				clock.Advance(time.Second)
				ls, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
				require.NoError(t, err)
				require.Len(t, ls, 1)
				return ls[0]
			}
			requireRecord := func(state idempotency.InboxState, attempt int, attemptedAt time.Time, lastError string) {
				t.Helper()
				r, found, err := inbox.Lookup(t.Context(), "evt_back")
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, state, r.State)
				require.Equal(t, attempt, r.Attempt)
				require.True(t, attemptedAt.Equal(r.AttemptedAt), "AttemptedAt %s, want %s", r.AttemptedAt, attemptedAt)
				require.Equal(t, lastError, r.LastError)
			}

			idempotency.ReleaseLeased(t.Context(), inbox, lease())
			requireRecord(idempotency.InboxPending, 0, time.Time{}, "")

			first := lease()
			ok, err := idempotency.SettleLeased(t.Context(), inbox, first, idempotency.InboxFailed, "downstream down")
			require.NoError(t, err)
			require.True(t, ok)
			requireRecord(idempotency.InboxFailed, 1, start.Add(2*time.Second), "downstream down")

			idempotency.ReleaseLeased(t.Context(), inbox, lease())
			requireRecord(idempotency.InboxFailed, 1, start.Add(2*time.Second), "downstream down")

			clock.Advance(time.Second)
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			requireRecord(idempotency.InboxProcessed, 2, start.Add(4*time.Second), "")
		})
	}
}

// leasedAhead is a task inbox on a fake clock with one worker: Run
// attempts k1, which waits for release["k1"], while k2 is leased ahead and
// waits for the worker. Its tasks count their runs.
type leasedAhead struct {
	store   *idempotency.MemoryStore
	clock   *idempotencytest.Clock
	cfg     idempotency.InboxConfig
	hs      *idempotency.Handlers
	task    *idempotency.Task[struct{}]
	inbox   *idempotency.Inbox
	started chan string
	release map[string]chan struct{}
	mu      sync.Mutex
	runs    map[string]int
}

// newLeasedAhead runs the inbox until k1 is being attempted and k2 is
// leased ahead, with a Timeout of a minute and a Lease of 90 s.
func newLeasedAhead(t *testing.T) *leasedAhead {
	f := &leasedAhead{
		store:   idempotency.NewMemoryStore(),
		clock:   idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		started: make(chan string, 4),
		release: map[string]chan struct{}{"k1": make(chan struct{}), "k2": make(chan struct{})},
		runs:    map[string]int{},
	}
	f.hs = idempotency.NewHandlers()
	f.task = idempotency.NewTask(f.hs, "slow", func(ctx context.Context, run idempotency.TaskRun[struct{}]) error {
		f.mu.Lock()
		f.runs[run.Key]++
		f.mu.Unlock()
		f.started <- run.Key
		select {
		case <-f.release[run.Key]:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	f.cfg = idempotency.InboxConfig{Workers: 1, Timeout: time.Minute, Lease: 90 * time.Second, Now: f.clock.Now, Logger: discardLogger()}
	var err error
	f.inbox, err = idempotency.NewInbox(f.store, f.hs, f.cfg)
	require.NoError(t, err)
	for _, key := range []string{"k1", "k2"} {
		_, err := f.store.Run(t.Context(), idempotency.Claim{EventID: "evt_" + key, EventType: "invoice.paid", ReceivedAt: f.clock.Now()},
			func(ctx context.Context, tx idempotency.Tx) error {
				_, err := f.task.Enqueue(ctx, tx, key, struct{}{})
				return err
			})
		require.NoError(t, err)
	}

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.inbox.Run(ctx) }()
	t.Cleanup(func() {
		close(f.release["k2"])
		stop()
		require.NoError(t, recv(t, done, "Run"))
	})
	require.Equal(t, "k1", recv(t, f.started, "k1's attempt"))
	require.Eventually(t, func() bool { // k2 leased ahead, waiting for the worker
		st, err := f.inbox.Stats(t.Context())
		return err == nil && st.TaskCounts[idempotency.InboxProcessing] == 2
	}, 10*time.Second, time.Millisecond)
	return f
}

// A task leased ahead waits in the queue while the worker is busy; when
// the worker is free, less of its lease is left than an attempt may take.
// It is given back and leased afresh rather than started, so that another
// process, taking over the lease that would expire mid-run, cannot run it
// a second time. A fake clock and channels make the schedule exact.
func TestInboxLeasedAheadTooLongIsLeasedAfresh(t *testing.T) {
	t.Parallel()
	f := newLeasedAhead(t)
	b, err := idempotency.NewInbox(f.store, f.hs, f.cfg) // another process's
	require.NoError(t, err)

	f.clock.Advance(40 * time.Second) // k2's lease has 50 s left, less than Timeout
	close(f.release["k1"])
	require.Equal(t, "k2", recv(t, f.started, "k2's attempt"))
	rec, found, err := f.inbox.Lookup(t.Context(), f.task.ID("k2"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, 1, rec.Attempt, "given back without counting, then leased afresh")
	require.Equal(t, f.clock.Now(), rec.AttemptedAt)

	f.clock.Advance(60 * time.Second) // past the lease it was queued with, within the fresh one
	n, err := b.WorkDue(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "the other process finds k2 under a live lease")
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Equal(t, map[string]int{"k1": 1, "k2": 1}, f.runs)
}

// A task leased ahead whose lease has exactly Timeout left when the worker
// takes it is attempted under that lease: only one with less than Timeout
// left is given back (InboxConfig.Lease, Run).
func TestInboxLeasedAheadWithTimeoutLeftIsAttempted(t *testing.T) {
	t.Parallel()
	f := newLeasedAhead(t)
	t0 := f.clock.Now()

	f.clock.Advance(30 * time.Second) // k2's lease has 60 s left: Timeout exactly
	close(f.release["k1"])
	require.Equal(t, "k2", recv(t, f.started, "k2's attempt"))
	rec, found, err := f.inbox.Lookup(t.Context(), f.task.ID("k2"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, 1, rec.Attempt)
	require.Equal(t, t0, rec.AttemptedAt, "attempted under the lease it was queued with, not given back")
}

func TestInboxStatesListsEachStateOnce(t *testing.T) {
	got := idempotency.InboxStates()
	require.ElementsMatch(t, []idempotency.InboxState{
		idempotency.InboxPending, idempotency.InboxProcessing, idempotency.InboxProcessed, idempotency.InboxSkipped,
		idempotency.InboxFailed, idempotency.InboxDeadLetter, idempotency.InboxIgnored,
	}, got)
	require.Equal(t, idempotency.InboxPending, got[0], "still to be applied first")
	got[0] = "changed"
	require.Equal(t, idempotency.InboxPending, idempotency.InboxStates()[0], "a copy")
}

func TestInboxStateFinalAndRedrivable(t *testing.T) {
	final := map[idempotency.InboxState]bool{idempotency.InboxProcessed: true, idempotency.InboxSkipped: true,
		idempotency.InboxIgnored: true, idempotency.InboxDeadLetter: true}
	redrivable := map[idempotency.InboxState]bool{idempotency.InboxDeadLetter: true, idempotency.InboxFailed: true,
		idempotency.InboxIgnored: true}
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	for _, st := range idempotency.InboxStates() {
		require.Equal(t, final[st], st.Final(), st)
		require.Equal(t, redrivable[st], st.Redrivable(), st)
		_, err := in.Redrive(t.Context(), idempotency.RedriveFilter{States: []idempotency.InboxState{st}, DryRun: true})
		if redrivable[st] {
			require.NoError(t, err, st)
		} else {
			require.ErrorContains(t, err, "cannot be redriven", st)
		}
	}
	// Not a state (the zero InboxRecord of a Lookup that found nothing, a
	// typo): not an end state, nor redrivable. Final said true.
	for _, st := range []idempotency.InboxState{"", "done", "Processed"} {
		require.False(t, st.Final(), "%q", st)
		require.False(t, st.Redrivable(), "%q", st)
	}
}
