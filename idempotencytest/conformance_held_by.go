package idempotencytest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// heldBy returns what Inbox.HeldBy says of id: the holders' ids, in the
// order given, and the holders themselves by id.
func (ib *inboxBench) heldBy(t *testing.T, id string) ([]string, map[string]idempotency.InboxHolder) {
	t.Helper()
	hs, err := ib.inbox.HeldBy(ctxT(t), id)
	require.NoError(t, err)
	ids, byID := []string{}, map[string]idempotency.InboxHolder{}
	for _, h := range hs {
		ids = append(ids, h.EventID)
		byID[h.EventID] = h
	}
	return ids, byID
}

// testInboxHeldBy: Inbox.HeldBy names the events that the lease's rule
// says hold an event back, with their state and times: every unfinished
// event of its object that sorts before it, and one that sorts after it
// while a worker holds it under an unexpired lease. A later pending event
// holds nothing back, nor does a dead-lettered, finished or dead worker's
// expired one; an event being applied, final, of no object or unknown is
// held by nothing.
func testInboxHeldBy(t *testing.T, b StoreBackend) {
	die := false
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		Backoff: func(int) time.Duration { return time.Minute }},
		func(id string, attempt int) error {
			switch {
			case die:
				runtime.Goexit()
			case id == "evt_hb_1":
				return errDownstream
			}
			return nil
		})
	ib.deliver(t, "evt_hb_2", "invoice.paid", "in_hb", 1756742402, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_hb_3", "invoice.paid", "in_hb", 1756742403, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_hb_1", "invoice.paid", "in_hb", 1756742401, idempotency.OutcomeQueued)
	ids, _ := ib.heldBy(t, "evt_hb_3")
	require.Equal(t, []string{"evt_hb_1", "evt_hb_2"}, ids, "every unfinished earlier event, in the object's order")
	cancelled, cancel := context.WithCancel(ctxT(t))
	cancel()
	_, err := ib.inbox.HeldBy(cancelled, "evt_hb_3")
	require.ErrorIs(t, err, context.Canceled)
	ids, _ = ib.heldBy(t, "evt_hb_1")
	require.Empty(t, ids, "a later pending event holds nothing back")

	ib.work(t, 1) // evt_hb_1 fails; evt_hb_2 and evt_hb_3 wait behind it
	ids, hs := ib.heldBy(t, "evt_hb_2")
	require.Equal(t, []string{"evt_hb_1"}, ids)
	h := hs["evt_hb_1"]
	require.Equal(t, normalize(ib.record(t, "evt_hb_1")), normalize(h.InboxRecord), "the holder's record, as Lookup has it")
	require.Equal(t, idempotency.InboxFailed, h.State)
	require.Equal(t, ib.clock.Now().Add(time.Minute), h.NextAttemptAt.UTC())
	require.Contains(t, h.LastError, errDownstream.Error())
	require.True(t, h.Earlier)
	require.True(t, h.LeaseUntil.IsZero(), "no lease")

	ib.clock.Advance(time.Minute)
	ib.work(t, 3) // evt_hb_1's last attempt dead-letters it; the others follow
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_hb_1").State)
	ids, _ = ib.heldBy(t, "evt_hb_3")
	require.Empty(t, ids, "a final event is held by nothing")
	ib.deliver(t, "evt_hb_4", "invoice.paid", "in_hb", 1756742404, idempotency.OutcomeQueued)
	ids, _ = ib.heldBy(t, "evt_hb_4")
	require.Empty(t, ids, "a dead-lettered or finished earlier event holds nothing back")
	ib.work(t, 1)

	// A later event under an unexpired lease holds an earlier one back.
	die = true
	ib.deliver(t, "evt_hl_2", "invoice.paid", "in_hl", 1756742402, idempotency.OutcomeQueued)
	ib.workDying(t)
	die = false
	leaseUntil := ib.clock.Now().Add(time.Minute)
	ib.deliver(t, "evt_hl_1", "invoice.paid", "in_hl", 1756742401, idempotency.OutcomeQueued)
	ids, hs = ib.heldBy(t, "evt_hl_1")
	require.Equal(t, []string{"evt_hl_2"}, ids, "held by the later event a worker holds")
	h = hs["evt_hl_2"]
	require.Equal(t, idempotency.InboxProcessing, h.State)
	require.Equal(t, 1, h.Attempt)
	require.Equal(t, leaseUntil, h.LeaseUntil.UTC())
	require.False(t, h.Earlier)
	ids, _ = ib.heldBy(t, "evt_hl_2")
	require.Empty(t, ids, "an event under its unexpired lease is being applied, held by nothing")

	ib.clock.Advance(time.Minute) // the lease expires: its worker died
	ids, _ = ib.heldBy(t, "evt_hl_1")
	require.Empty(t, ids, "a later event whose lease expired holds nothing back")
	ids, _ = ib.heldBy(t, "evt_hl_2")
	require.Equal(t, []string{"evt_hl_1"}, ids, "the expired lease's event waits behind the earlier one")
	ib.work(t, 2)
	require.Equal(t, []string{"evt_hb_2", "evt_hb_3", "evt_hb_4", "evt_hl_1", "evt_hl_2"}, ib.appliedOrder())

	// A redriven event is to be applied again, after the later events of
	// its object that were applied meanwhile: a final one is held by
	// nothing, and nothing unfinished sorts before the redriven one.
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_hb_1"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, id := range []string{"evt_hb_1", "evt_hb_4"} {
		ids, _ = ib.heldBy(t, id)
		require.Empty(t, ids, "held by of %s after evt_hb_1's redrive", id)
	}

	// Of no object, or unknown: held by nothing.
	ib.deliver(t, "evt_hn_2", "invoice.paid", "", 1756742402, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_hn_1", "invoice.paid", "", 1756742401, idempotency.OutcomeQueued)
	for _, id := range []string{"evt_hn_2", "evt_unknown"} {
		ids, _ = ib.heldBy(t, id)
		require.Empty(t, ids, "held by of %q", id)
	}
	// No id an event can have: refused, as Forget refuses it.
	for _, id := range []string{"", "evt_\x00", "evt_\xff"} {
		hs, err := ib.inbox.HeldBy(ctxT(t), id)
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "held by of %q", id)
		require.Empty(t, hs)
	}
}

// testInboxHeldByOpenTransaction: an event whose attempt runs past its
// lease, its transaction still open, holds the other events of its object
// back, an earlier one that arrived late included, as the lease's rule
// says; HeldBy names it, with the lease that has passed. The event itself
// is being applied, not waiting: nothing holds it back.
func testInboxHeldByOpenTransaction(t *testing.T, b StoreBackend) {
	holding, release := make(chan struct{}), make(chan struct{})
	var held, released sync.Once
	ib := newInboxBench(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 30 * time.Second}, func(id string, _ int) error {
		if id == "evt_ho_2" {
			held.Do(func() { close(holding) })
			<-release
		}
		return nil
	})
	defer released.Do(func() { close(release) })
	ib.deliver(t, "evt_ho_2", "invoice.paid", "in_ho", 1756742402, idempotency.OutcomeQueued)
	leaseUntil := ib.clock.Now().Add(time.Minute)
	done := make(chan error, 1)
	go func() {
		_, err := ib.inbox.WorkDue(context.Background())
		done <- err
	}()
	receive(t, holding, "the blocked handler")
	ib.deliver(t, "evt_ho_1", "invoice.paid", "in_ho", 1756742401, idempotency.OutcomeQueued)
	ib.clock.Advance(2 * time.Minute)

	ids, hs := ib.heldBy(t, "evt_ho_1")
	require.Equal(t, []string{"evt_ho_2"}, ids, "held by the event whose transaction is open past its lease")
	h := hs["evt_ho_2"]
	require.Equal(t, idempotency.InboxProcessing, h.State)
	require.False(t, h.Earlier)
	require.Equal(t, leaseUntil, h.LeaseUntil.UTC())
	ids, _ = ib.heldBy(t, "evt_ho_2")
	require.Empty(t, ids, "an event whose transaction is open past its lease is being applied, held by nothing")

	released.Do(func() { close(release) })
	require.NoError(t, receive(t, done, "the blocked worker"))
	require.Equal(t, []string{"evt_ho_2", "evt_ho_1"}, ib.appliedOrder())
	ids, _ = ib.heldBy(t, "evt_ho_1")
	require.Empty(t, ids)
}

// testInboxHeldByBounded: of an object with many events still to be
// applied, HeldBy names the first 100 that sort before the event, in the
// object's order.
func testInboxHeldByBounded(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	const n = 101
	for i := range n + 1 {
		ib.deliver(t, fmt.Sprintf("evt_hm_%03d", i), "invoice.paid", "in_hm", 1756742400+int64(i), idempotency.OutcomeQueued)
	}
	ids, _ := ib.heldBy(t, fmt.Sprintf("evt_hm_%03d", n))
	want := make([]string, 100)
	for i := range want {
		want[i] = fmt.Sprintf("evt_hm_%03d", i)
	}
	require.Equal(t, want, ids)
}
