package idempotency

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// ingestSenders is how many inserts of stored events one PgxStore has in
// flight at once. Deliveries that arrive meanwhile wait and go together in
// the next insert: under load one statement and one commit store many
// events, and at rest each delivery is its own insert, sent at once.
const ingestSenders = 4

// ingest batches the inbox inserts of concurrent deliveries: it is group
// commit, done in the process. Each delivery still gets its own answer
// (stored, or known before) once the statement that stored it committed.
type ingest struct {
	mu      sync.Mutex
	pending []*ingestReq
	senders int // goroutines sending inserts
}

type ingestReq struct {
	ctx      context.Context
	row      *inboxRow
	inserted bool
	err      error
	done     chan struct{} // closed with ingest.mu held, once inserted and err are set
	// gaveUp, guarded by ingest.mu, is set when the delivery stopped
	// waiting before its answer: it was answered 503, so it is not the
	// copy told that the insert stored its event.
	gaveUp bool
}

// enqueueBatched stores r with the deliveries waiting with it, and reports whether
// this insert stored it (false: it was stored before).
func (s *PgxStore) enqueueBatched(ctx context.Context, r *inboxRow) (bool, error) {
	req := &ingestReq{ctx: ctx, row: r, done: make(chan struct{})}
	g := &s.ingest
	g.mu.Lock()
	g.pending = append(g.pending, req)
	start := g.senders < ingestSenders
	if start {
		g.senders++
	}
	g.mu.Unlock()
	if start {
		s.sendIngest(true) // sends req with what waits, on this goroutine
	}
	select {
	case <-req.done:
		return req.inserted, req.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-req.done: // answered as the deadline passed: the answer is known
		return req.inserted, req.err
	default:
	}
	if i := slices.Index(g.pending, req); i >= 0 {
		// No insert took it yet: none will, so that the 503 it is
		// answered is true (nothing stored).
		g.pending = slices.Delete(g.pending, i, i+1)
	}
	// Otherwise the insert that took it may still commit; a redelivery
	// then finds it stored, and a copy of the event that still waits
	// for that insert is the one told it stored it.
	req.gaveUp = true
	return false, ctx.Err()
}

// answer answers the requests of batch: err, or else, for each event
// stored by the insert (stored), that the first of its copies still
// waiting stored it, and the others that it was stored before.
func (g *ingest) answer(batch []*ingestReq, err error, stored func(eventID string) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	told := make(map[string]bool, len(batch))
	for _, req := range batch {
		id := req.row.EventID
		req.err = err
		req.inserted = err == nil && !req.gaveUp && !told[id] && stored(id)
		if req.inserted {
			told[id] = true
		}
		close(req.done)
	}
}

// sendIngest inserts what waits, batch after batch, until nothing does.
// A delivery that became a sender (inline) sends one batch, its own
// delivery among it, and leaves what arrived meanwhile to a goroutine, so
// that its answer waits for no other insert.
func (s *PgxStore) sendIngest(inline bool) {
	g := &s.ingest
	for {
		g.mu.Lock()
		batch := g.pending
		g.pending = nil
		if len(batch) == 0 {
			g.senders--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		s.insertIngest(batch)
		if inline {
			g.mu.Lock()
			if len(g.pending) == 0 {
				g.senders--
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			go s.sendIngest(false) // keeps this sender's place
			return
		}
	}
}

// insertIngest stores batch in one INSERT ... ON CONFLICT DO NOTHING and
// answers each request. Requests for one event id share the row: the
// first still waiting is told whether the insert stored it, the others
// that it was stored before.
func (s *PgxStore) insertIngest(batch []*ingestReq) {
	// The batch lives as long as its most patient delivery: one that gave
	// up must not fail the others'.
	ctx, cancel := latestDeadline(context.Background(), batch)
	defer cancel()
	var since uint64 // before the insert: a row it finds may be deleted meanwhile
	if s.stored != nil {
		since = s.stored.since()
	}

	if len(batch) == 1 {
		// Alone, the common case at rest: the plain insert, answered
		// directly.
		req := batch[0]
		var inserted bool
		tries := 0
		err := s.insertStored(ctx, func(q pgxQuerier) (err error) {
			tries++
			inserted, err = s.insertOne(ctx, q, req.row)
			return err
		})
		if err == nil && s.stored != nil {
			s.stored.addSince(req.row.EventID, since) // stored now, by this insert or before it
		}
		req.row.insertRetried = err == nil && !inserted && tries > 1
		s.ingest.answer(batch, err, func(string) bool { return inserted })
		return
	}

	first := make(map[string]*ingestReq, len(batch))
	unique := make([]*inboxRow, 0, len(batch))
	for _, req := range batch {
		if _, ok := first[req.row.EventID]; ok {
			continue
		}
		first[req.row.EventID] = req
		unique = append(unique, req.row)
	}
	// Every batch inserts in event id order: two batches that hold the
	// same events in other orders would each insert one and wait for the
	// other's, a deadlock that fails one of them.
	slices.SortFunc(unique, func(a, b *inboxRow) int { return strings.Compare(a.EventID, b.EventID) })
	var cols ingestColumns
	for _, r := range unique {
		cols.add(r)
	}
	var stored []string
	tries := 0
	err := s.insertStored(ctx, func(q pgxQuerier) error {
		tries++
		if len(cols.id) == 1 {
			// Copies of one event: the plain insert.
			ok, err := s.insertOne(ctx, q, batch[0].row)
			if ok {
				stored = cols.id
			}
			return err
		}
		rows, err := q.Query(ctx, s.inbox.enqueueMany, cols.args()...)
		if err != nil {
			return err
		}
		stored, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if dataError(err) && len(first) > 1 {
		// One row PostgreSQL refuses (checkEnvelope lets none through that
		// we know of) must not fail the deliveries stored beside it: each
		// event is inserted on its own, and only its copies share its
		// error.
		byEvent := make(map[string][]*ingestReq, len(first))
		for _, req := range batch {
			byEvent[req.row.EventID] = append(byEvent[req.row.EventID], req)
		}
		for _, reqs := range byEvent {
			s.insertIngest(reqs)
		}
		return
	}
	if err == nil && s.stored != nil {
		for id := range first {
			s.stored.addSince(id, since) // stored now, by this insert or before it
		}
	}
	inserted := make(map[string]bool, len(stored))
	for _, id := range stored {
		inserted[id] = true
	}
	if err == nil && tries > 1 {
		for _, req := range batch {
			req.row.insertRetried = !inserted[req.row.EventID]
		}
	}
	s.ingest.answer(batch, err, func(id string) bool { return inserted[id] })
}

// dataError reports PostgreSQL's refusal of a value (SQLSTATE class 22,
// data exception), which no retry of the same row overcomes.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22")
}

// insertStored runs insert, which stores events in the inbox, on its own
// (see autocommit), and names the operation in its error.
//
// A panic in the code of the store's connections that the insert runs (a
// pgx tracer, a pool's hook, the PgxBeginner's own methods) is the
// insert's error, a PanicError that names it: the insert is shared by the
// deliveries batched in it (see ingest), and a panic going on up the
// sender's goroutine would leave the others unanswered until their
// Config.Timeout, the sender's place taken for good, or, from a sender's
// own goroutine, end the process. Each delivery of the batch is answered
// 503 with it, and logged with its stack, as a handler's panic is turned
// into a failed delivery.
func (s *PgxStore) insertStored(ctx context.Context, insert func(q pgxQuerier) error) (err error) {
	defer s.recoverConnsPanic("enqueue", &err)
	// A connection the server closed while it sat idle in the pool fails
	// the insert; inserting again is safe (a row the first try stored makes
	// the second a duplicate, which is stored all the same).
	err = s.autocommitIdempotent(ctx, insert)
	if err != nil {
		return s.inboxError("enqueue", err)
	}
	return nil
}

// storeConnsPanicked is what PanicError says panicked in the code of a
// PgxStore's connections (recoverConnsPanic).
const storeConnsPanicked = "the store's connections panicked (a pgx tracer, a pool's hook or the PgxBeginner)"

// recoverConnsPanic, deferred in a method of the store that runs on a
// goroutine of the library's (the ingest's shared insert, an inbox
// worker's lease, attempt and settle, Run's clock check, its listen
// connection and the notifications of other processes), turns a panic in the code of the
// store's connections into *err, a PanicError that names them, as the
// error of the inbox's op ("" for an attempt's transaction: the error
// itself). Going on up, it would end the process (a worker's goroutine) or
// leave others waiting for what the goroutine was to do; as an error, it
// is what a failed statement is there: logged, and retried.
func (s *PgxStore) recoverConnsPanic(op string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	p := newPanicError(v)
	p.what = storeConnsPanicked
	*err = p
	if op != "" {
		*err = s.inboxError(op, p)
	}
}

// insertOne stores r with the plain insert, which costs less than
// unnesting, and reports whether it stored it (false: it was stored
// before).
func (s *PgxStore) insertOne(ctx context.Context, q pgxQuerier, r *inboxRow) (bool, error) {
	tag, err := q.Exec(ctx, s.inbox.enqueue, r.EventID, r.EventType, r.ObjectID, r.Account, r.Livemode, r.APIVersion,
		r.Created, r.Payload, string(r.State), r.ReceivedAt, optionalTime(r.NextAttemptAt), optionalTime(r.FinishedAt), r.Trace)
	return err == nil && tag.RowsAffected() == 1, err
}

// latestDeadline is ctx bounded by the latest deadline among the batch's
// requests, or unbounded if one has none.
func latestDeadline(ctx context.Context, batch []*ingestReq) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, req := range batch {
		d, ok := req.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// ingestColumns are the rows of one insert, column by column: the
// statement unnests them.
type ingestColumns struct {
	id, typ, object, account, apiVersion, state, trace []string
	livemode                                           []bool
	created, received, next, finished                  []pgtype.Timestamptz
	payload                                            [][]byte
}

func (c *ingestColumns) add(r *inboxRow) {
	c.id = append(c.id, r.EventID)
	c.typ = append(c.typ, r.EventType)
	c.object = append(c.object, r.ObjectID)
	c.account = append(c.account, r.Account)
	c.livemode = append(c.livemode, r.Livemode)
	c.apiVersion = append(c.apiVersion, r.APIVersion)
	c.created = append(c.created, pgtype.Timestamptz{Time: r.Created, Valid: true})
	c.payload = append(c.payload, r.Payload)
	c.state = append(c.state, string(r.State))
	c.received = append(c.received, optionalTime(r.ReceivedAt))
	c.next = append(c.next, optionalTime(r.NextAttemptAt))
	c.finished = append(c.finished, optionalTime(r.FinishedAt))
	c.trace = append(c.trace, r.Trace)
}

func (c *ingestColumns) args() []any {
	return []any{c.id, c.typ, c.object, c.account, c.livemode, c.apiVersion, c.created,
		c.payload, c.state, c.received, c.next, c.finished, c.trace}
}
