package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// memInbox is an Inbox on a zero MemoryStore, driven by a fake clock, with
// an invoice.paid handler that records the commits in order.
type memInbox struct {
	store *idempotency.MemoryStore
	clock *idempotencytest.Clock
	hs    *idempotency.Handlers
	cfg   idempotency.InboxConfig
	inbox *idempotency.Inbox
	h     http.Handler

	mu       sync.Mutex
	runs     map[string]int // handler runs per event id
	applied  []string       // committed event ids, in commit order
	inFlight map[string]int // handler runs under way per object id
	overlaps int            // times two events of one object ran at once

	// fail, when set, fails the handler's run n of an event.
	fail func(eventID string, n int) error
	// block, when set, is called inside the handler's transaction.
	block func(eventID string, n int)
}

var errMemDownstream = errors.New("downstream unavailable")

// memBackoff waits n minutes after failed attempt n.
func memBackoff(n int) time.Duration { return time.Duration(n) * time.Minute }

func newMemInbox(t *testing.T, cfg idempotency.InboxConfig) *memInbox {
	t.Helper()
	m := &memInbox{
		store:    &idempotency.MemoryStore{}, // the zero value is ready to use
		clock:    idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		hs:       idempotency.NewHandlers(),
		runs:     map[string]int{},
		inFlight: map[string]int{},
	}
	idempotency.On(m.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		obj := ev.Object.ID
		m.mu.Lock()
		m.runs[ev.ID]++
		n := m.runs[ev.ID]
		m.inFlight[obj]++
		if m.inFlight[obj] > 1 {
			m.overlaps++
		}
		fail, block := m.fail, m.block
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			m.inFlight[obj]--
			m.mu.Unlock()
		}()
		tx.AfterCommit(func(context.Context) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.applied = append(m.applied, ev.ID)
		})
		if block != nil {
			block(ev.ID, n)
		}
		if fail != nil {
			return fail(ev.ID, n)
		}
		return nil
	})
	if cfg.Backoff == nil {
		cfg.Backoff = memBackoff
	}
	cfg.Now = m.clock.Now
	cfg.Logger = discardLogger()
	m.cfg = cfg
	m.inbox = m.newInbox(t)
	h, err := m.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true})
	require.NoError(t, err)
	m.h = h
	return m
}

// newInbox is another Inbox on the same store and clock: a second process.
func (m *memInbox) newInbox(t *testing.T) *idempotency.Inbox {
	t.Helper()
	in, err := idempotency.NewInbox(m.store, m.hs, m.cfg)
	require.NoError(t, err)
	return in
}

// memInboxPayload is an invoice.paid event about invoiceID, created at the
// given second.
func memInboxPayload(t *testing.T, eventID, invoiceID string, created int64) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(invoicePayload(t, eventID, invoiceID, "acct_1"), &ev))
	ev["created"] = created
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

const memCreated = 1756742400 // 2025-09-01T16:00:00Z

func (m *memInbox) deliver(t *testing.T, payload []byte, want idempotency.Outcome) {
	t.Helper()
	a := idempotencytest.Deliver(m.h, payload, testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, want, a.Outcome, a.Body)
}

func (m *memInbox) deliverEvent(t *testing.T, eventID, invoiceID string, createdOffset int64) {
	t.Helper()
	m.deliver(t, memInboxPayload(t, eventID, invoiceID, memCreated+createdOffset), idempotency.OutcomeQueued)
}

func (m *memInbox) work(t *testing.T, want int) {
	t.Helper()
	n, err := m.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, n, "attempts made by WorkDue")
}

func (m *memInbox) record(t *testing.T, eventID string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := m.inbox.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok, "event %s is not in the inbox", eventID)
	return r
}

func (m *memInbox) counts(t *testing.T) map[idempotency.InboxState]int {
	t.Helper()
	st, err := m.inbox.Stats(t.Context())
	require.NoError(t, err)
	out := map[idempotency.InboxState]int{}
	for s, n := range st.Counts {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

func (m *memInbox) appliedOrder() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.applied)
}

func (m *memInbox) runsOf(eventID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[eventID]
}

func (m *memInbox) lease(t *testing.T, want int) []idempotency.InboxLeased {
	t.Helper()
	ls, err := idempotency.LeaseInbox(t.Context(), m.inbox, 10)
	require.NoError(t, err)
	require.Len(t, ls, want, "events leased")
	return ls
}

func TestMemoryInboxQueuesThenDuplicates(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	payload := memInboxPayload(t, "evt_q", "in_q", memCreated)
	m.deliver(t, payload, idempotency.OutcomeQueued)
	m.deliver(t, payload, idempotency.OutcomeDuplicate)
	require.Empty(t, m.appliedOrder(), "nothing is applied at ingest")
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxPending: 1}, m.counts(t))

	m.clock.Advance(time.Second)
	m.work(t, 1)
	require.Equal(t, []string{"evt_q"}, m.appliedOrder())
	r := m.record(t, "evt_q")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Empty(t, r.LastError)
	require.True(t, r.AttemptedAt.Equal(m.clock.Now()))
	require.True(t, r.FinishedAt.Equal(m.clock.Now()))
	require.True(t, r.NextAttemptAt.IsZero())
	rec, ok, err := m.store.LookupEvent(t.Context(), "evt_q")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.OutcomeProcessed, rec.Outcome)

	m.deliver(t, payload, idempotency.OutcomeDuplicate)
	m.work(t, 0)
	require.Equal(t, 1, m.runsOf("evt_q"))
}

func TestMemoryInboxRetriesThenAppliesOnce(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	m.fail = func(_ string, n int) error {
		if n <= 2 {
			return fmt.Errorf("run %d: %w", n, errMemDownstream)
		}
		return nil
	}
	m.deliverEvent(t, "evt_r", "in_r", 0)
	m.work(t, 1)
	r := m.record(t, "evt_r")
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.LastError, "run 1: downstream unavailable")
	require.True(t, r.NextAttemptAt.Equal(m.clock.Now().Add(time.Minute)), "backoff after attempt 1")
	require.True(t, r.FinishedAt.IsZero())
	require.Empty(t, m.appliedOrder(), "a failed attempt rolls back")

	m.work(t, 0)
	m.clock.Advance(time.Minute - time.Second)
	m.work(t, 0)
	m.clock.Advance(time.Second)
	m.work(t, 1)
	r = m.record(t, "evt_r")
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, 2, r.Attempt)
	require.True(t, r.NextAttemptAt.Equal(m.clock.Now().Add(2*time.Minute)), "backoff after attempt 2")

	m.clock.Advance(2 * time.Minute)
	m.work(t, 1)
	require.Equal(t, []string{"evt_r"}, m.appliedOrder())
	r = m.record(t, "evt_r")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Empty(t, r.LastError, "a success clears the last error")
	require.True(t, r.NextAttemptAt.IsZero())
	require.True(t, r.FinishedAt.Equal(m.clock.Now()))

	m.clock.Advance(time.Hour)
	m.work(t, 0)
	require.Equal(t, 3, m.runsOf("evt_r"))
}

func TestMemoryInboxPoisonIsDeadLetteredThenRedriven(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{MaxAttempts: 3})
	var broken atomic.Bool
	broken.Store(true)
	m.fail = func(string, int) error {
		if broken.Load() {
			return errMemDownstream
		}
		return nil
	}
	m.deliverEvent(t, "evt_p", "in_p", 0)
	received := m.record(t, "evt_p").ReceivedAt
	for n := 1; n <= 3; n++ {
		m.work(t, 1)
		m.clock.Advance(memBackoff(n))
	}
	r := m.record(t, "evt_p")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Equal(t, errMemDownstream.Error(), r.LastError)
	require.True(t, r.NextAttemptAt.IsZero())
	require.False(t, r.FinishedAt.IsZero())
	st, err := m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Counts[idempotency.InboxDeadLetter])
	require.True(t, st.OldestPending.IsZero(), "a dead letter is not pending")
	m.clock.Advance(24 * time.Hour)
	m.work(t, 0)

	n, err := m.inbox.Redrive(t.Context(), idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, r, m.record(t, "evt_p"), "a dry run moves nothing")

	broken.Store(false)
	n, err = m.inbox.Redrive(t.Context(), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r = m.record(t, "evt_p")
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Equal(t, 0, r.Attempt, "a fresh budget")
	require.Equal(t, errMemDownstream.Error(), r.LastError, "the last error is kept")
	require.True(t, r.NextAttemptAt.Equal(m.clock.Now()))
	require.True(t, r.FinishedAt.IsZero())
	st, err = m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.True(t, st.OldestPending.Equal(received))

	m.work(t, 1)
	require.Equal(t, []string{"evt_p"}, m.appliedOrder())
	require.Equal(t, idempotency.InboxProcessed, m.record(t, "evt_p").State)
	n, err = m.inbox.Redrive(t.Context(), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestMemoryInboxAppliesAnObjectInCreatedOrder(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	m.deliverEvent(t, "evt_3", "in_a", 2)
	m.deliverEvent(t, "evt_2", "in_a", 1)
	m.deliverEvent(t, "evt_1", "in_a", 0)
	// Created in the same second: the event id decides.
	m.deliverEvent(t, "evt_tie_b", "in_b", 0)
	m.deliverEvent(t, "evt_tie_a", "in_b", 0)
	m.work(t, 5)
	applied := m.appliedOrder()
	require.Equal(t, []string{"evt_1", "evt_2", "evt_3"}, slices.DeleteFunc(slices.Clone(applied), func(id string) bool { return id[4] == 't' }))
	require.Equal(t, []string{"evt_tie_a", "evt_tie_b"}, slices.DeleteFunc(slices.Clone(applied), func(id string) bool { return id[4] != 't' }))
}

func TestMemoryInboxFailedEventHoldsItsObject(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	m.fail = func(id string, n int) error {
		if id == "evt_1" && n == 1 {
			return errMemDownstream
		}
		return nil
	}
	m.deliverEvent(t, "evt_2", "in_a", 1)
	m.deliverEvent(t, "evt_1", "in_a", 0)
	m.deliverEvent(t, "evt_x", "in_x", 5)
	m.work(t, 2) // evt_1 fails, evt_x is another object's
	require.Equal(t, []string{"evt_x"}, m.appliedOrder())
	require.Equal(t, idempotency.InboxPending, m.record(t, "evt_2").State, "held back by the failed evt_1")
	require.Zero(t, m.runsOf("evt_2"))

	m.clock.Advance(time.Minute)
	m.work(t, 2)
	require.Equal(t, []string{"evt_x", "evt_1", "evt_2"}, m.appliedOrder())
}

func TestMemoryInboxDeadLetterReleasesItsObject(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{MaxAttempts: 2})
	var broken atomic.Bool
	broken.Store(true)
	m.fail = func(id string, _ int) error {
		if id == "evt_1" && broken.Load() {
			return errMemDownstream
		}
		return nil
	}
	m.deliverEvent(t, "evt_1", "in_a", 0)
	m.deliverEvent(t, "evt_2", "in_a", 1)
	m.work(t, 1)
	m.clock.Advance(time.Minute)
	m.work(t, 2) // evt_1 is dead-lettered, and then evt_2 goes
	require.Equal(t, idempotency.InboxDeadLetter, m.record(t, "evt_1").State)
	require.Equal(t, []string{"evt_2"}, m.appliedOrder())

	broken.Store(false)
	n, err := m.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_1"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m.work(t, 1)
	require.Equal(t, []string{"evt_2", "evt_1"}, m.appliedOrder(), "a redriven event comes after the ones it no longer held back")
}

// TestMemoryInboxExpiredLeaseIsRetried: a worker that leased an event and
// died is taken over when the lease expires, as the next attempt.
func TestMemoryInboxExpiredLeaseIsRetried(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{MaxAttempts: 3})
	m.deliverEvent(t, "evt_1", "in_a", 0)
	m.deliverEvent(t, "evt_2", "in_a", 1)
	require.Equal(t, 1, m.lease(t, 1)[0].Attempt(), "one event of an object at a time")
	r := m.record(t, "evt_1")
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.True(t, r.AttemptedAt.Equal(m.clock.Now()))
	require.True(t, r.NextAttemptAt.IsZero(), "not due while leased")
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxPending: 1, idempotency.InboxProcessing: 1}, m.counts(t))
	m.work(t, 0)
	m.clock.Advance(idempotency.DefaultLease - time.Second)
	m.work(t, 0)

	m.clock.Advance(time.Second)
	m.work(t, 2)
	require.Equal(t, []string{"evt_1", "evt_2"}, m.appliedOrder())
	r = m.record(t, "evt_1")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 2, r.Attempt, "the dead worker's attempt counts")
	require.Equal(t, 1, m.runsOf("evt_1"))
}

// TestMemoryInboxExpiredLastLeaseIsDeadLettered: a worker that dies at the
// last attempt sends the event to dead letter, which releases its object.
func TestMemoryInboxExpiredLastLeaseIsDeadLettered(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{MaxAttempts: 2})
	m.deliverEvent(t, "evt_1", "in_a", 0)
	m.deliverEvent(t, "evt_2", "in_a", 1)
	m.lease(t, 1)
	m.clock.Advance(idempotency.DefaultLease)
	require.Equal(t, 2, m.lease(t, 1)[0].Attempt())
	m.clock.Advance(idempotency.DefaultLease)

	m.work(t, 1)
	r := m.record(t, "evt_1")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, "lease expired after attempt 2: its worker died, hung or lost its connection, or the clocks of the replicas disagree", r.LastError)
	require.True(t, r.FinishedAt.Equal(m.clock.Now()))
	require.Zero(t, m.runsOf("evt_1"))
	require.Equal(t, []string{"evt_2"}, m.appliedOrder())
}

// TestMemoryInboxLeaseReturnsCopies: a worker that scribbles on its leased
// payload does not change what the next attempt reads.
func TestMemoryInboxLeaseReturnsCopies(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	m.deliverEvent(t, "evt_c", "in_c", 0)
	p := m.lease(t, 1)[0].Payload()
	for i := range p {
		p[i] = 'x'
	}
	m.clock.Advance(idempotency.DefaultLease)
	m.work(t, 1)
	require.Equal(t, []string{"evt_c"}, m.appliedOrder())
}

// TestMemoryInboxStaleAttemptCannotSettle: once a lease has been taken
// over, the old attempt can neither record a result nor apply the event.
func TestMemoryInboxStaleAttemptCannotSettle(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	m.deliverEvent(t, "evt_s", "in_s", 0)
	stale := m.lease(t, 1)[0]
	m.clock.Advance(idempotency.DefaultLease)
	fresh := m.lease(t, 1)[0]
	require.Equal(t, 2, fresh.Attempt())

	ok, err := idempotency.SettleLeased(t.Context(), m.inbox, stale, idempotency.InboxFailed, "stale")
	require.NoError(t, err)
	require.False(t, ok)
	r := m.record(t, "evt_s")
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, "lease expired after attempt 1: its worker died, hung or lost its connection, or the clocks of the replicas disagree", r.LastError, "not the stale attempt's")

	idempotency.ApplyLeased(t.Context(), m.inbox, stale)
	require.Zero(t, m.runsOf("evt_s"), "the fence fails at the claim, before the handler")
	_, claimed, err := m.store.LookupEvent(t.Context(), "evt_s")
	require.NoError(t, err)
	require.False(t, claimed, "the stale claim rolled back")
	require.Equal(t, r, m.record(t, "evt_s"))

	idempotency.ApplyLeased(t.Context(), m.inbox, fresh)
	require.Equal(t, []string{"evt_s"}, m.appliedOrder())
	r = m.record(t, "evt_s")
	require.Equal(t, idempotency.InboxProcessed, r.State)

	m.clock.Advance(time.Minute)
	for _, l := range []idempotency.InboxLeased{stale, fresh} {
		ok, err := idempotency.SettleLeased(t.Context(), m.inbox, l, idempotency.InboxFailed, "late")
		require.NoError(t, err)
		require.False(t, ok, "attempt %d settles a processed event", l.Attempt())
		idempotency.ApplyLeased(t.Context(), m.inbox, l) // a duplicate now
	}
	require.Equal(t, r, m.record(t, "evt_s"))
	require.Equal(t, 1, m.runsOf("evt_s"))
}

// TestMemoryInboxOpenAttemptIsNotTakenOver: while an attempt's transaction
// is open its row is locked, as on PostgreSQL: even past its lease it is
// neither leased again, nor dead-lettered, nor settled, and the other
// events of its object wait, an earlier one that arrived late included.
func TestMemoryInboxOpenAttemptIsNotTakenOver(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{MaxAttempts: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	m.block = func(id string, _ int) {
		if id == "evt_1" {
			close(entered)
			<-release
		}
	}
	m.deliverEvent(t, "evt_1", "in_a", 0)
	m.deliverEvent(t, "evt_2", "in_a", 1)
	l := m.lease(t, 1)[0]
	m.deliverEvent(t, "evt_0", "in_a", -1)
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		idempotency.ApplyLeased(context.Background(), m.inbox, l)
	}()
	<-entered

	m.clock.Advance(2 * idempotency.DefaultLease)
	n, err := m.newInbox(t).WorkDue(t.Context()) // another process
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxPending: 2, idempotency.InboxProcessing: 1}, m.counts(t))

	// A settle of the open attempt waits for its transaction, then finds
	// the commit.
	type settled struct {
		ok  bool
		err error
	}
	settle := make(chan settled, 1)
	go func() {
		ok, err := idempotency.SettleLeased(context.Background(), m.inbox, l, idempotency.InboxFailed, "too early")
		settle <- settled{ok, err}
	}()
	require.Never(t, func() bool { return len(settle) > 0 }, 50*time.Millisecond, time.Millisecond)

	close(release)
	<-applied
	s := <-settle
	require.NoError(t, s.err)
	require.False(t, s.ok)
	r := m.record(t, "evt_1")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Empty(t, r.LastError)

	m.work(t, 2)
	require.Equal(t, []string{"evt_1", "evt_0", "evt_2"}, m.appliedOrder())
}

func TestMemoryInboxStatsAndList(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{})
	st, err := m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Counts, 7, "every state, zero included")
	require.True(t, st.OldestPending.IsZero())

	first := m.clock.Now()
	m.deliverEvent(t, "evt_a", "in_a", 0)
	m.clock.Advance(time.Second)
	m.deliverEvent(t, "evt_c", "in_c", 0)
	m.deliverEvent(t, "evt_b", "in_b", 0) // received in the same instant as evt_c
	m.clock.Advance(time.Second)
	m.deliver(t, eventPayload(t, "charge.refunded", "evt_ign", nil), idempotency.OutcomeIgnored)

	recs, err := m.inbox.List(t.Context(), idempotency.InboxFilter{})
	require.NoError(t, err)
	ids := func(rs []idempotency.InboxRecord) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.EventID)
		}
		return out
	}
	require.Equal(t, []string{"evt_ign", "evt_c", "evt_b", "evt_a"}, ids(recs), "newest received first, then by event id")
	recs, err = m.inbox.List(t.Context(), idempotency.InboxFilter{Limit: 2, States: []idempotency.InboxState{idempotency.InboxPending}})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_c", "evt_b"}, ids(recs))
	recs, err = m.inbox.List(t.Context(), idempotency.InboxFilter{ObjectID: "in_a"})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_a"}, ids(recs))
	recs, err = m.inbox.List(t.Context(), idempotency.InboxFilter{Since: first.Add(time.Second), Until: first.Add(2 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_c", "evt_b"}, ids(recs))

	st, err = m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Counts[idempotency.InboxPending])
	require.Equal(t, 1, st.Counts[idempotency.InboxIgnored])
	require.True(t, st.OldestPending.Equal(first))

	m.lease(t, 3)
	st, err = m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Counts[idempotency.InboxProcessing])
	require.True(t, st.OldestPending.Equal(first), "a processing event is still to be applied")
	m.clock.Advance(idempotency.DefaultLease)
	m.work(t, 3)
	st, err = m.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Counts[idempotency.InboxProcessed])
	require.True(t, st.OldestPending.IsZero())
}

// TestMemoryInboxConcurrentWorkers: two processes' workers on one store
// apply every event once, one event of an object at a time, in created
// order, through random failures.
func TestMemoryInboxConcurrentWorkers(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{Workers: 4, Backoff: func(int) time.Duration { return 0 }})
	m.fail = func(string, int) error {
		if rand.IntN(4) == 0 {
			return errMemDownstream
		}
		return nil
	}
	const objects, perObject = 5, 12
	var want []string
	created, object := map[string]int64{}, map[string]string{}
	for i := range objects * perObject {
		id := fmt.Sprintf("evt_%02d", i)
		want = append(want, id)
		created[id], object[id] = int64(rand.IntN(3)), fmt.Sprintf("in_%d", i%objects)
		m.deliverEvent(t, id, object[id], created[id])
	}
	// The order is checked in the handler, against the store: every
	// earlier event of the object (by created, then id) is processed when
	// a later one runs. The order of the AfterCommit funcs (m.applied) is
	// not the order of the commits: a worker can commit the next event of
	// an object and run its AfterCommit before the worker that committed
	// the earlier one runs its own.
	var orderMu sync.Mutex
	var outOfOrder []string
	m.block = func(eventID string, _ int) {
		for other := range created {
			if other == eventID || object[other] != object[eventID] ||
				created[other] > created[eventID] || created[other] == created[eventID] && other > eventID {
				continue
			}
			if r, _, err := m.inbox.Lookup(context.Background(), other); err != nil || r.State != idempotency.InboxProcessed {
				orderMu.Lock()
				outOfOrder = append(outOfOrder, fmt.Sprintf("%s ran while %s, earlier, was %s (%v)", eventID, other, r.State, err))
				orderMu.Unlock()
			}
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	var runs sync.WaitGroup
	runErrs := make(chan error, 2)
	for _, in := range []*idempotency.Inbox{m.inbox, m.newInbox(t)} {
		runs.Go(func() { runErrs <- in.Run(ctx) })
	}
	require.Eventually(t, func() bool { return len(m.appliedOrder()) == len(want) }, 30*time.Second, time.Millisecond)
	cancel()
	runs.Wait()
	close(runErrs)
	for err := range runErrs {
		require.NoError(t, err)
	}

	applied := m.appliedOrder()
	require.ElementsMatch(t, want, applied, "every event once")
	m.mu.Lock()
	require.Zero(t, m.overlaps, "two events of one object ran at once")
	m.mu.Unlock()
	recs, err := m.inbox.List(t.Context(), idempotency.InboxFilter{Limit: idempotency.MaxListLimit})
	require.NoError(t, err)
	for _, r := range recs {
		require.Equal(t, idempotency.InboxProcessed, r.State)
	}
	orderMu.Lock()
	defer orderMu.Unlock()
	require.Empty(t, outOfOrder, "events of one object applied out of order")
}
