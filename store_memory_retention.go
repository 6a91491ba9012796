package idempotency

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Prune deletes what r no longer keeps, as [PgxStore.Prune] does: in
// batches of r.BatchSize rows (r.OnBatch is called after each), passing
// over an inbox row that a transaction in flight holds, and stopping
// between batches when ctx is done.
func (s *MemoryStore) Prune(ctx context.Context, r Retention) (PruneReport, error) {
	var rep PruneReport
	if err := r.check(); err != nil {
		return rep, err
	}
	c := r.cutoffs()
	inboxStep := func(count *int, kinds []InboxKind, states []InboxState, cutoff time.Time) pruneStep {
		return pruneStep{count: count, del: func(_ context.Context, n int) (int, error) {
			return s.pruneBatch(n, func() int {
				return deleteWhere(s.inbox, n, func(r *memoryInboxRow) bool {
					return r.heldBy == nil && slices.Contains(kinds, r.Kind) && slices.Contains(states, r.State) &&
						!r.FinishedAt.IsZero() && r.FinishedAt.Before(cutoff)
				})
			}), nil
		}}
	}
	steps := []pruneStep{
		{count: &rep.EventIDs, del: func(_ context.Context, n int) (int, error) {
			return s.pruneBatch(n, func() int {
				return deleteWhere(s.events, n, func(e EventRecord) bool { return e.ProcessedAt.Before(c.eventIDs) })
			}), nil
		}},
		inboxStep(&rep.Events, []InboxKind{KindEvent}, []InboxState{InboxProcessed, InboxSkipped, InboxIgnored}, c.payloads),
		inboxStep(&rep.DeadLetters, []InboxKind{KindEvent, KindTask}, []InboxState{InboxDeadLetter}, c.deadLetters),
	}
	steps = append(steps, pruneStep{count: &rep.Objects, del: func(_ context.Context, n int) (int, error) {
		return s.pruneBatch(n, func() int {
			return deleteWhere(s.objects, n, func(o objectRecord) bool { return o.fetchedAt.Before(c.eventIDs) })
		}), nil
	}})
	if !c.tasks.IsZero() {
		steps = append(steps, inboxStep(&rep.Tasks, []InboxKind{KindTask}, []InboxState{InboxProcessed, InboxSkipped}, c.tasks))
	}
	if !c.guards.IsZero() {
		steps = append(steps, pruneStep{count: &rep.Guards, del: func(_ context.Context, n int) (int, error) {
			return s.pruneBatch(n, func() int {
				k := deleteWhere(s.guards, n, func(g GuardRecord) bool { return g.ClaimedAt.Before(c.guards) })
				return k + deleteWhere(s.order, n-k, func(o orderRecord) bool { return o.created.Before(c.guards) })
			}), nil
		}})
	}
	return rep, runPrune(ctx, &r, &rep, steps)
}

// pruneBatch runs del, which deletes at most n rows, under s.mu.
func (s *MemoryStore) pruneBatch(n int, del func() int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return del()
}

// deleteWhere deletes at most n entries of m that doomed selects and
// reports how many it deleted.
func deleteWhere[K comparable, V any](m map[K]V, n int, doomed func(V) bool) int {
	deleted := 0
	for k, v := range m {
		if deleted == n {
			break
		}
		if doomed(v) {
			delete(m, k)
			deleted++
		}
	}
	return deleted
}

// Forget deletes what makes eventID known, as [PgxStore.Forget] does: its
// claim, the guards its transaction claimed and its inbox row, refusing
// with [ErrUnfinished] an event still to be applied in the inbox.
func (s *MemoryStore) Forget(ctx context.Context, eventID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	if r, ok := s.inbox[eventID]; ok {
		if r.Kind == KindTask {
			return false, fmt.Errorf("idempotency: forget %q: %w", eventID, ErrForgetTask)
		}
		if !r.State.final() {
			return false, fmt.Errorf("idempotency: forget %q: %w (inbox state %s)", eventID, ErrUnfinished, r.State)
		}
		delete(s.inbox, eventID)
		found = true
	}
	if _, ok := s.events[eventID]; ok {
		delete(s.events, eventID)
		found = true
	}
	found = deleteWhere(s.guards, len(s.guards), func(g GuardRecord) bool { return g.EventID == eventID }) > 0 || found
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
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), r.Payload...), true, nil
}
