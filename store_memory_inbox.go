package idempotency

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"
)

// The MemoryStore's inbox: one row per event id in s.inbox, every field
// guarded by s.mu. A fenced Run holds its event's row from the claim until
// its transaction ends, as PostgreSQL's row lock would: while held, the
// row is neither leased (FOR UPDATE SKIP LOCKED skips it) nor settled (an
// UPDATE that matches it waits for the lock), and it keeps every other
// event of its object back, even past its lease, as PgxStore's lease does
// (it probes the row lock of an expired lease with FOR SHARE SKIP LOCKED).
// A task's row is held by the transaction that committed it until that
// transaction's AfterCommit funcs have run: a fake applies its writes
// there, and a worker must not run the task before they are, as on
// PostgreSQL the writes commit with the task. So is an event's row that
// its fenced transaction committed final (s.ending): its object's next
// event is not leased until those funcs have run.

// memoryInboxRow is an inbox row and the transaction holding it.
type memoryInboxRow struct {
	inboxRow
	heldBy  *memoryTx  // the open fenced transaction applying it (until its AfterCommit funcs have run, after a commit), or the one that committed a task until its AfterCommit funcs have run; nil when none
	filedAs InboxState // the state s.inboxByState holds it under; "" when none
	// argsFiledAt is the FinishedAt s.taskArgs holds it under; zero when
	// it is not there.
	argsFiledAt time.Time
	// finishedFiledAt is the FinishedAt s.inboxFinished holds it under,
	// in the order of its kind and filedAs; zero when it is not there.
	finishedFiledAt time.Time
	// attemptedFiledAt is the AttemptedAt s.inboxAttempted holds it
	// under; zero when it is not there.
	attemptedFiledAt time.Time
}

// argsPosition is r's position in s.taskArgs.
func (r *memoryInboxRow) argsPosition() InboxPosition {
	return InboxPosition{ReceivedAt: r.argsFiledAt, EventID: r.EventID}
}

// finishedPosition is r's position in its order of s.inboxFinished.
func (r *memoryInboxRow) finishedPosition() InboxPosition {
	return InboxPosition{ReceivedAt: r.finishedFiledAt, EventID: r.EventID}
}

// attemptedPosition is r's position in s.inboxAttempted.
func (r *memoryInboxRow) attemptedPosition() InboxPosition {
	return InboxPosition{ReceivedAt: r.attemptedFiledAt, EventID: r.EventID}
}

// argsToClear reports whether Prune is to clear r's arguments once r
// finished long enough ago, when r is in state: a finished task's, not
// cleared yet.
func (r *memoryInboxRow) argsToClear(state InboxState) bool {
	return r.Kind == KindTask && (state == InboxProcessed || state == InboxSkipped) &&
		len(r.Payload) > 0 && !r.FinishedAt.IsZero()
}

// dueAt is when r is due: pending and failed rows at NextAttemptAt,
// processing rows when their lease expires.
func (r *memoryInboxRow) dueAt() time.Time {
	if r.State == InboxProcessing {
		return r.LeaseUntil
	}
	return r.NextAttemptAt
}

// due reports whether a worker may take r at now.
func (r *memoryInboxRow) due(now time.Time) bool {
	return r.unfinished() && r.heldBy == nil && !r.dueAt().After(now)
}

// unfinished reports whether r is still to be applied: it keeps the later
// events of its object back.
func (r *memoryInboxRow) unfinished() bool { return !r.State.Final() }

// busy reports whether a worker is applying r at now: under an unexpired
// lease, or in a transaction still open after its lease expired.
func (r *memoryInboxRow) busy(now time.Time) bool {
	return r.State == InboxProcessing && (r.heldBy != nil || r.LeaseUntil.After(now))
}

// objectKey is what the inbox orders events by: their object's id within
// its account. Some ids are unique within one account only (a
// capability's is its name, an application's the platform's ca_ id): the
// same id under two accounts names two objects.
type objectKey struct{ account, object string }

func (r *memoryInboxRow) objectKey() objectKey { return objectKey{r.Account, r.ObjectID} }

// inboxSlot is a kind and a state: the rows of one inboxOrder.
type inboxSlot struct {
	kind  InboxKind
	state InboxState
}

// indexInboxRow files r under its state in s.inboxByState, and in
// s.unfinished while it is still to be applied; s.mu is held. Whatever
// stores an inbox row or changes its state calls it.
func (s *MemoryStore) indexInboxRow(r *memoryInboxRow) { s.fileInboxRow(r, r.State) }

// dropInboxRow deletes r from the inbox and its indexes; s.mu is held.
func (s *MemoryStore) dropInboxRow(r *memoryInboxRow) {
	delete(s.inbox, r.EventID)
	s.fileInboxRow(r, "")
}

// unfinishedRoom is the fewest rows s.unfinished must have held for it to
// be made anew once it shrank to a quarter of that: below, its room costs
// a range little.
const unfinishedRoom = 256

// fileInboxRow files r under state, or nowhere when state is "".
func (s *MemoryStore) fileInboxRow(r *memoryInboxRow, state InboxState) {
	s.fileTaskArgs(r, state)
	s.fileAttempted(r, state)
	s.fileFinished(r, state) // before r.filedAs, which names its order, changes
	if r.filedAs != state {
		if r.filedAs != "" {
			s.inboxByState[inboxSlot{r.Kind, r.filedAs}].remove(r)
		}
		if state != "" {
			k := inboxSlot{r.Kind, state}
			if s.inboxByState[k] == nil {
				s.inboxByState[k] = &inboxOrder{}
			}
			s.inboxByState[k].insert(r)
		}
		r.filedAs = state
	}
	if state != "" && !state.Final() {
		s.unfinished[r.EventID] = r
		s.unfinishedPeak = max(s.unfinishedPeak, len(s.unfinished))
		return
	}
	if _, ok := s.unfinished[r.EventID]; !ok {
		return
	}
	delete(s.unfinished, r.EventID)
	if n := len(s.unfinished); s.unfinishedPeak >= unfinishedRoom && n < s.unfinishedPeak/4 {
		// A lease ranges over the map: one that once held a burst of
		// events would cost as much after they were applied. A new map
		// has the room of what it holds (maps.Clone keeps the old room).
		fresh := make(map[string]*memoryInboxRow, n)
		maps.Copy(fresh, s.unfinished)
		s.unfinished, s.unfinishedPeak = fresh, n
	}
}

// fileTaskArgs files r in s.taskArgs, under its FinishedAt, while its
// arguments are to clear in state, and nowhere else.
func (s *MemoryStore) fileTaskArgs(r *memoryInboxRow, state InboxState) {
	var at time.Time
	if r.argsToClear(state) {
		at = r.FinishedAt
	}
	refile(r, &r.argsFiledAt, &s.taskArgs, &s.taskArgs, at)
}

// fileAttempted files r in s.inboxAttempted, under its AttemptedAt, once
// it was attempted, unless state is "" (r leaves the inbox).
func (s *MemoryStore) fileAttempted(r *memoryInboxRow, state InboxState) {
	at := r.AttemptedAt
	if state == "" {
		at = time.Time{}
	}
	refile(r, &r.attemptedFiledAt, &s.inboxAttempted, &s.inboxAttempted, at)
}

// fileFinished files r in s.inboxFinished, under its FinishedAt in the
// order of its kind and state, while state is final and r has finished,
// and nowhere else; r.filedAs is the state it was filed under.
func (s *MemoryStore) fileFinished(r *memoryInboxRow, state InboxState) {
	var at time.Time
	var to *inboxOrder
	if state != "" && state.Final() && !r.FinishedAt.IsZero() {
		k := inboxSlot{r.Kind, state}
		if s.inboxFinished[k] == nil {
			s.inboxFinished[k] = &inboxOrder{by: (*memoryInboxRow).finishedPosition}
		}
		at, to = r.FinishedAt, s.inboxFinished[k]
	}
	refile(r, &r.finishedFiledAt, s.inboxFinished[inboxSlot{r.Kind, r.filedAs}], to, at)
}

// refile moves r from the order from, where it is filed under *filed
// (nowhere when that is zero), to the order to under at (nowhere when at
// is zero); the position of r in either order is what *filed holds.
func refile(r *memoryInboxRow, filed *time.Time, from, to *inboxOrder, at time.Time) {
	if from == to && at.Equal(*filed) {
		return
	}
	if !filed.IsZero() {
		from.remove(r)
	}
	if *filed = at; !at.IsZero() {
		to.insert(r)
	}
}

// compareObjectOrder orders the events of one object: earliest created
// first, then by event id, as they are to be applied.
func compareObjectOrder(a, b *memoryInboxRow) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.EventID, b.EventID)
}

func (s *MemoryStore) inboxEnqueue(ctx context.Context, r *inboxRow) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if r.EventID == "" {
		return false, errorf("inbox: an event without an id")
	}
	if r.State != InboxPending && r.State != InboxIgnored {
		return false, errorf("inbox: event %s enqueued as %q (pending or ignored expected)", r.EventID, r.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.inbox[r.EventID]; ok {
		return false, nil
	}
	s.init()
	// What PgxStore's INSERT stores; the attempt columns start empty.
	row := &memoryInboxRow{inboxRow: inboxRow{
		InboxRecord: InboxRecord{
			Kind: KindEvent, EventID: r.EventID, EventType: r.EventType, ObjectID: r.ObjectID, Account: r.Account,
			Livemode: r.Livemode, APIVersion: r.APIVersion, Created: kept(r.Created),
			State: r.State, ReceivedAt: kept(r.ReceivedAt), NextAttemptAt: kept(r.NextAttemptAt), FinishedAt: kept(r.FinishedAt),
		},
		Payload: bytes.Clone(r.Payload), // the caller may reuse its buffer
		Seq:     s.nextSeq(),
		Trace:   r.Trace,
	}}
	s.inbox[r.EventID] = row
	s.indexInboxRow(row)
	return true, nil
}

func (s *MemoryStore) inboxLease(ctx context.Context, now time.Time, limit int, lease time.Duration, maxAttempts int) (_ []inboxRow, dead []InboxRecord, _ error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if limit <= 0 {
		return nil, nil, nil
	}
	now = kept(now)
	s.mu.Lock()
	defer s.mu.Unlock()

	// A worker that died at the last attempt used the event's budget up.
	// This comes first, so that the event no longer holds its object back.
	// Only unfinished rows can be due or hold an object back: the finished
	// ones, however many, are not looked at.
	for _, r := range s.unfinished {
		if r.State == InboxProcessing && r.due(now) && r.Attempt >= maxAttempts {
			r.State, r.FinishedAt = InboxDeadLetter, now
			r.NextAttemptAt, r.LeaseUntil = time.Time{}, time.Time{}
			r.LastError = leaseExpired(r.Attempt)
			s.indexInboxRow(r)
			dead = append(dead, r.InboxRecord)
		}
	}

	// Per object: whether a worker is on it, and which event goes next.
	// An event applied whose transaction still runs its AfterCommit funcs
	// keeps its object busy: a fake applies its writes there, and the
	// next event's handler must find them, as on PostgreSQL it finds them
	// committed.
	busy := make(map[objectKey]bool)
	for r := range s.ending {
		busy[r.objectKey()] = true
	}
	next := make(map[objectKey]*memoryInboxRow)
	var due dueRows
	for _, r := range s.unfinished {
		if r.due(now) {
			due = append(due, r)
		}
		if r.ObjectID == "" {
			continue
		}
		k := r.objectKey()
		if r.busy(now) {
			busy[k] = true
		}
		if n := next[k]; n == nil || compareObjectOrder(r, n) < 0 {
			next[k] = r
		}
	}
	// The due rows are taken earliest due first, then by event id: a
	// heap yields them in that order as far as the lease goes, which is
	// seldom past limit rows, without sorting them all.
	heap.Init(&due)

	var out []inboxRow
	for due.Len() > 0 {
		if len(out) == limit {
			break
		}
		r := heap.Pop(&due).(*memoryInboxRow)
		if k := r.objectKey(); r.ObjectID != "" {
			if busy[k] || next[k] != r {
				continue
			}
			busy[k] = true
		}
		expired := r.State == InboxProcessing // its worker died: taken alone
		if expired && len(out) > 0 {
			break
		}
		dueAt, prev, prevState := r.dueAt(), r.AttemptedAt, r.State
		if expired {
			r.LastError = leaseExpired(r.Attempt)
		}
		r.State = InboxProcessing
		r.Attempt++
		r.AttemptedAt, r.LeaseUntil, r.NextAttemptAt = now, kept(now.Add(lease)), time.Time{}
		s.indexInboxRow(r)
		leased := r.inboxRow
		leased.Payload = bytes.Clone(r.Payload) // the worker's own copy
		leased.DueAt, leased.PrevAttemptedAt, leased.PrevState, leased.LeaseExpired = dueAt, prev, prevState, expired
		out = append(out, leased)
		if expired {
			break
		}
	}
	return out, dead, nil
}

// dueRows is a heap of due rows, earliest due first, then by event id
// (unique: a total order).
type dueRows []*memoryInboxRow

func (h dueRows) Len() int { return len(h) }
func (h dueRows) Less(i, j int) bool {
	return cmp.Or(h[i].dueAt().Compare(h[j].dueAt()), strings.Compare(h[i].EventID, h[j].EventID)) < 0
}
func (h dueRows) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueRows) Push(x any)   { *h = append(*h, x.(*memoryInboxRow)) }
func (h *dueRows) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

func (s *MemoryStore) inboxSettle(ctx context.Context, eventID string, attempt int, attemptedAt time.Time, st InboxState, lastError string, nextAt, now time.Time, uncounted bool, shownAttemptedAt time.Time) (bool, error) {
	switch st {
	case InboxFailed, InboxDeadLetter, InboxProcessed, InboxIgnored, InboxSkipped, InboxPending, InboxProcessing:
	default:
		return false, errorf("inbox: an attempt cannot end as %q", st)
	}
	attemptedAt, nextAt, now, shownAttemptedAt = kept(attemptedAt), kept(nextAt), kept(now), kept(shownAttemptedAt)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		s.mu.Lock()
		r := s.inbox[eventID]
		if r == nil || r.State != InboxProcessing || r.Attempt != attempt || !r.AttemptedAt.Equal(attemptedAt) {
			s.mu.Unlock()
			return false, nil
		}
		if r.heldBy != nil {
			// The fence matches a row whose transaction is open: wait for
			// it to end, as an UPDATE waits for the row lock, and look
			// again (a commit made the row final).
			ended := r.heldBy.ended
			s.mu.Unlock()
			select {
			case <-ended:
				continue
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		r.State, r.LastError, r.LeaseUntil = st, storableText(lastError), time.Time{}
		r.NextAttemptAt, r.FinishedAt = nextAt, time.Time{}
		if st.Final() {
			r.NextAttemptAt, r.FinishedAt = time.Time{}, now
		}
		if st == InboxProcessing { // an expired lease given back: under its lost lease again
			r.NextAttemptAt, r.LeaseUntil = time.Time{}, nextAt
		}
		if uncounted { // a snoozed task or a row given back
			r.Attempt--
			r.AttemptedAt = shownAttemptedAt
		}
		s.indexInboxRow(r)
		s.mu.Unlock()
		return true, nil
	}
}

// inboxRedrive reads the rows f names by id, or else the rows of the kinds
// and states f asks for received within its range: not the rows of other
// states, the finished ones a store keeps.
func (s *MemoryStore) inboxRedrive(ctx context.Context, f RedriveFilter, now time.Time) (events, tasks int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	now = kept(now)
	s.mu.Lock() // f was checked and given its defaults by Inbox.RedriveByKind
	defer s.mu.Unlock()
	var rows []*memoryInboxRow
	if len(f.EventIDs) > 0 {
		rows = slices.Collect(s.inboxRowsByID(f.EventIDs))
	} else {
		for o := range s.inboxOrders(f.Kind, f.States) {
			rows = slices.AppendSeq(rows, o.received(f.Since, f.Until))
		}
	}
	rows = slices.DeleteFunc(rows, func(r *memoryInboxRow) bool { return !f.matches(&r.InboxRecord) })
	for _, r := range rows { // not while a walk reads the orders
		if r.Kind == KindTask {
			tasks++
		} else {
			events++
		}
		if !f.DryRun {
			r.State, r.Attempt = InboxPending, 0
			r.NextAttemptAt, r.FinishedAt, r.LeaseUntil = now, time.Time{}, time.Time{}
			r.Redrives, r.RedrivenAt = r.Redrives+1, now
			s.indexInboxRow(r)
		}
	}
	return events, tasks, nil
}

// inboxRowsByID yields the row of each of ids the inbox holds, once; s.mu
// is held.
func (s *MemoryStore) inboxRowsByID(ids []string) iter.Seq[*memoryInboxRow] {
	return func(yield func(*memoryInboxRow) bool) {
		for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
			if r := s.inbox[id]; r != nil && !yield(r) {
				return
			}
		}
	}
}

// inboxOrders yields the orders of the rows of kind (every kind when "")
// in states (every state when none), each once; s.mu is held.
func (s *MemoryStore) inboxOrders(kind InboxKind, states []InboxState) iter.Seq[*inboxOrder] {
	return func(yield func(*inboxOrder) bool) {
		for k, o := range s.inboxByState {
			if (kind == "" || k.kind == kind) && (len(states) == 0 || slices.Contains(states, k.state)) && !yield(o) {
				return
			}
		}
	}
}

func (s *MemoryStore) inboxStats(ctx context.Context) (InboxStats, error) {
	if err := ctx.Err(); err != nil {
		return InboxStats{}, err
	}
	st := newInboxStats()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.inboxByState {
		var oldest time.Time
		if r := o.oldest(); r != nil && r.unfinished() {
			oldest = r.ReceivedAt
		}
		st.add(k.kind, k.state, o.n, oldest, time.Time{})
	}
	if r := s.inboxAttempted.newest(); r != nil {
		st.LastAttempt = r.AttemptedAt
	}
	return st, nil
}

func (s *MemoryStore) inboxList(ctx context.Context, f InboxFilter) ([]InboxRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock() // f was checked and given its defaults by Inbox.List
	defer s.mu.Unlock()
	if len(f.EventIDs) > 0 {
		// Those events alone, each once.
		var out []InboxRecord
		for r := range s.inboxRowsByID(f.EventIDs) {
			if f.matches(&r.InboxRecord) {
				out = append(out, r.InboxRecord)
			}
		}
		slices.SortFunc(out, func(a, b InboxRecord) int { return comparePosition(b.Position(), a.Position()) })
		return out[:min(len(out), f.Limit)], nil
	}
	// The rows of the kinds and states f keeps, newest first, from below
	// its After and Until: the newest row of the cursors, each walking
	// down one kind and state, until the page is full or the rows were
	// received before Since.
	var from *InboxPosition
	if !f.Until.IsZero() {
		from = &InboxPosition{ReceivedAt: f.Until} // before every row received at Until
	}
	if f.After.EventID != "" && (from == nil || comparePosition(f.After, *from) < 0) {
		from = &f.After
	}
	var cursors []inboxCursor
	for o := range s.inboxOrders(f.Kind, f.States) {
		cursors = append(cursors, o.below(from))
	}
	var out []InboxRecord
	for len(out) < f.Limit {
		var top *inboxCursor
		for i := range cursors {
			c := &cursors[i]
			if r := c.row(); r != nil && (top == nil || comparePosition(r.Position(), top.row().Position()) > 0) {
				top = c
			}
		}
		if top == nil || !f.Since.IsZero() && top.row().ReceivedAt.Before(f.Since) {
			break
		}
		if r := top.row(); f.matches(&r.InboxRecord) {
			out = append(out, r.InboxRecord)
		}
		top.next()
	}
	return out, nil
}

// waits reports whether r waits on the other events of its object at now:
// it has an object, is still to be applied, and no worker is applying it.
func (r *memoryInboxRow) waits(now time.Time) bool {
	return r.ObjectID != "" && r.unfinished() && !r.busy(now)
}

func (s *MemoryStore) inboxHeldBy(ctx context.Context, eventID string, now time.Time, limit int) ([]InboxHolder, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now = kept(now)
	s.mu.Lock()
	r := s.inbox[eventID]
	if r == nil || !r.waits(now) {
		s.mu.Unlock()
		return nil, nil
	}
	// inboxLease's rule, seen from r.
	var earlier, later []*memoryInboxRow
	for _, o := range s.unfinished {
		if o == r || o.objectKey() != r.objectKey() {
			continue
		}
		if compareObjectOrder(o, r) < 0 {
			earlier = append(earlier, o)
		} else if o.busy(now) {
			later = append(later, o)
		}
	}
	var out []InboxHolder
	for i, rows := range [][]*memoryInboxRow{earlier, later} {
		slices.SortFunc(rows, compareObjectOrder)
		for _, o := range rows[:min(len(rows), limit)] {
			out = append(out, InboxHolder{InboxRecord: o.InboxRecord, Earlier: i == 0})
		}
	}
	s.mu.Unlock()
	return out, nil
}

// holdInboxRow is a fenced claim's check: tx's event must be processing at
// exactly the fence's attempt, its lease still running. It then holds the
// row until tx ends and reports true; otherwise the lease was lost and it
// reports false.
func (tx *memoryTx) holdInboxRow() bool {
	s := tx.s
	f := tx.claim.fence
	begun := f.begun()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.inbox[tx.claim.EventID]
	if r == nil || r.State != InboxProcessing || r.Attempt != f.Attempt ||
		!r.AttemptedAt.Equal(f.AttemptedAt) || !r.LeaseUntil.After(begun) || r.heldBy != nil {
		return false
	}
	r.heldBy, tx.inboxRow = tx, r
	return true
}

// finishInboxRow makes the row tx holds final, with the outcome of rec,
// the ledger record tx commits; s.mu is held. A rollback leaves the row
// processing, for its worker to settle or its lease to expire.
func (tx *memoryTx) finishInboxRow(rec *EventRecord) {
	r := tx.inboxRow
	if r == nil {
		return
	}
	r.State = inboxState(rec.Outcome)
	r.FinishedAt, r.LastError = kept(tx.claim.fence.Now), ""
	r.NextAttemptAt, r.LeaseUntil = time.Time{}, time.Time{}
	tx.s.indexInboxRow(r)
	if r.ObjectID != "" {
		tx.s.ending[r] = struct{}{} // until releaseInboxRow
	}
}

// releaseInboxRow lets the row tx held be leased and settled again; s.mu
// is held.
func (tx *memoryTx) releaseInboxRow() {
	if tx.inboxRow != nil {
		delete(tx.s.ending, tx.inboxRow)
		tx.inboxRow.heldBy = nil
		tx.inboxRow = nil
	}
}
