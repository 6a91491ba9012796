package idempotency

import (
	"context"
	"time"
)

// Prune deletes what r no longer keeps, as [PgxStore.Prune] does: in
// batches of r.BatchSize rows (r.OnBatch is called after each), deleting
// an inbox row once its transaction committed (its AfterCommit funcs may
// still run), passing over OnCurrent's objects and CheckOrder's keys
// that a transaction in flight holds, and stopping between batches when
// ctx is done. With r.DryRun it counts what it would delete and clear,
// and changes nothing, holding the store's lock from the first count to
// the last: one state of the store.
func (s *MemoryStore) Prune(ctx context.Context, r Retention) (PruneReport, error) {
	var rep PruneReport
	if err := r.check(); err != nil {
		return rep, err
	}
	c, err := r.cutoffs()
	if err != nil {
		return rep, err
	}
	// locked runs f under s.mu: a batch of a prune, or anything of a dry
	// run, which holds s.mu throughout.
	locked := func(f func()) {
		s.mu.Lock()
		defer s.mu.Unlock()
		f()
	}
	if r.DryRun {
		s.mu.Lock()
		defer s.mu.Unlock()
		locked = func(f func()) { f() }
	}
	locked(func() { c.keepKeysOf(s.oldestAwaiting(), r.EventIDs) })
	// older runs del, which deletes (with r.DryRun, counts) at most n
	// entries dated before cutoff, as one batch.
	older := func(del func(n int, cutoff time.Time) int) pruneDeleter {
		return func(_ context.Context, n int, cutoff time.Time) (deleted int, _ error) {
			cutoff = kept(cutoff) // as PgxStore sends it
			locked(func() { deleted = del(n, cutoff) })
			return deleted, nil
		}
	}
	// inbox deletes the finished rows of kind in states: of each state,
	// in the order they finished, up to the first that finished at cutoff
	// or later.
	inbox := func(kind InboxKind, states ...InboxState) pruneDeleter {
		return older(func(n int, cutoff time.Time) int {
			var batch []*memoryInboxRow
			for _, state := range states {
				batch = s.inboxFinished[inboxSlot{kind, state}].appendBefore(batch, n, cutoff)
			}
			if !r.DryRun {
				for _, r := range batch { // not while the walk reads the orders
					s.dropInboxRow(r)
				}
			}
			return len(batch)
		})
	}
	steps := pruneSteps(&rep, c, pruneDeleters{
		eventIDs: older(func(n int, cutoff time.Time) int {
			return deleteWhere(s.events, n, r.DryRun, func(_ string, e EventRecord) bool {
				return e.ProcessedAt.Before(cutoff) && !s.inboxAwaits(e.EventID)
			})
		}),
		events:      inbox(KindEvent, InboxProcessed, InboxSkipped, InboxIgnored),
		deadLetters: inbox(KindEvent, InboxDeadLetter),
		deadTasks:   inbox(KindTask, InboxDeadLetter),
		objects: older(func(n int, cutoff time.Time) int {
			return deleteWhere(s.objects, n, r.DryRun, func(k guardID, o objectRecord) bool {
				return o.fetchedAt.Before(cutoff) && s.prunable(recordObject, k, r.DryRun)
			})
		}),
		tasks: inbox(KindTask, InboxProcessed, InboxSkipped),
		// The finished tasks whose arguments are to clear, in the order
		// they finished, up to the first that finished at cutoff or later.
		taskArgs: older(func(n int, cutoff time.Time) int {
			batch := s.taskArgs.appendBefore(nil, n, cutoff)
			if !r.DryRun {
				for _, r := range batch { // not while the walk reads the order
					r.Payload = nil
					s.indexInboxRow(r)
				}
			}
			return len(batch)
		}),
		guards: older(func(n int, cutoff time.Time) int {
			return deleteWhere(s.guards, n, r.DryRun, func(_ guardID, g GuardRecord) bool { return g.ClaimedAt.Before(cutoff) })
		}),
		order: older(func(n int, cutoff time.Time) int {
			return deleteWhere(s.order, n, r.DryRun, func(k guardID, o orderRecord) bool {
				return o.created.Before(cutoff) && s.prunable(recordOrder, k, r.DryRun)
			})
		}),
	}, r.DryRun)
	return rep, runPrune(ctx, &r, &rep, steps)
}

// inboxAwaits reports whether eventID is in the inbox still to be applied
// or waiting for a redrive, as a copy stored again after its first one was
// applied can be: its claim is what answers that copy duplicate, and is
// kept; s.mu is held.
func (s *MemoryStore) inboxAwaits(eventID string) bool {
	r, ok := s.inbox[eventID]
	return ok && awaits(r.Kind, r.State)
}

// awaits reports whether an inbox row of kind in state awaits: an event
// still to be applied or dead-lettered.
func awaits(kind InboxKind, state InboxState) bool {
	return kind == KindEvent && (!state.Final() || state == InboxDeadLetter)
}

// oldestAwaiting is when the oldest event still awaiting in the inbox
// (inboxAwaits) was received, or the zero time when there is none: the
// first of each awaiting state's rows, received first; s.mu is held.
func (s *MemoryStore) oldestAwaiting() time.Time {
	var oldest time.Time
	for k, o := range s.inboxByState {
		if r := o.oldest(); r != nil && awaits(k.kind, k.state) && (oldest.IsZero() || r.ReceivedAt.Before(oldest)) {
			oldest = r.ReceivedAt
		}
	}
	return oldest
}

// prunable reports whether a prune may delete the record of kind at k
// (OnCurrent's object, CheckOrder's key): not while a transaction in
// flight holds it, which then reads or writes it, as PgxStore's prune
// passes over a locked row (SKIP LOCKED) rather than wait for it or
// delete it under its holder; a dry run counts it, as PgxStore's count
// does. s.mu is held.
func (s *MemoryStore) prunable(kind string, k guardID, dryRun bool) bool {
	return dryRun || s.locks[lockID{record: kind, guardID: k}] == nil
}

// deleteWhere deletes at most n entries of m that doomed selects, or with
// dryRun only counts them, and reports how many.
func deleteWhere[K comparable, V any](m map[K]V, n int, dryRun bool, doomed func(K, V) bool) int {
	deleted := 0
	for k, v := range m {
		if deleted == n {
			break
		}
		if doomed(k, v) {
			if !dryRun {
				delete(m, k)
			}
			deleted++
		}
	}
	return deleted
}

// Forget deletes what makes eventID known, as [PgxStore.Forget] does: its
// claim, the guards its transaction claimed and its inbox row, refusing
// with [ErrUnfinished] an event still to be applied in the inbox.
func (s *MemoryStore) Forget(ctx context.Context, eventID string) (bool, error) {
	if err := checkEventID("forget", eventID); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	if r, ok := s.inbox[eventID]; ok {
		if r.Kind == KindTask {
			return false, errorf("forget %q: %w", eventID, ErrForgetTask)
		}
		if !r.State.Final() {
			return false, errorf("forget %q: %w (inbox state %s)", eventID, ErrUnfinished, r.State)
		}
		s.dropInboxRow(r)
		found = true
	}
	if _, ok := s.events[eventID]; ok {
		delete(s.events, eventID)
		found = true
	}
	found = deleteWhere(s.guards, len(s.guards), false, func(_ guardID, g GuardRecord) bool { return g.EventID == eventID }) > 0 || found
	return found, nil
}

// inboxPayload implements inboxBackend.
func (s *MemoryStore) inboxPayload(ctx context.Context, eventID string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.inbox[eventID]
	if !ok || len(r.Payload) == 0 { // a finished task's arguments cleared by Prune
		return nil, false, nil
	}
	return append([]byte(nil), r.Payload...), true, nil
}
