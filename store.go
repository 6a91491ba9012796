package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store is the contract both backends satisfy: [MemoryStore] and [PgxStore].
//
// Run is the only way to apply an event, and it fixes the order: begin a
// transaction, claim the event id in it, apply, commit. The two wrong orders
// (claim in a transaction of its own, or write first and claim after) cannot
// be expressed.
type Store interface {
	// Run claims c.EventID in a new transaction and, if the claim is new,
	// calls apply with that transaction, then commits. It reports:
	//
	//   - OutcomeDuplicate, nil: the id was claimed by a committed
	//     transaction. A claim held by a transaction still in flight makes Run
	//     wait for it to end: duplicate if it committed, the claim is taken
	//     if it rolled back.
	//   - OutcomeProcessed, nil: apply returned nil and the transaction
	//     committed; the AfterCommit funcs have run. If any of them panicked,
	//     err is an *[AfterCommitError]; the commit stands.
	//   - OutcomeSkipped, nil: apply returned a [SkipError] (possibly
	//     wrapped); its writes were rolled back and the claim stored with the
	//     reason, so the id is answered duplicate from then on.
	//   - OutcomeFailed, err: apply returned err; everything was rolled back.
	//   - OutcomeUnavailable, err: the store could not be reached; err wraps
	//     [ErrStoreUnavailable]. Nothing was written.
	//
	// A nil apply only records the claim (used for ignored events when
	// Config.RecordIgnored is set).
	Run(ctx context.Context, c Claim, apply ApplyFunc) (Outcome, error)

	// Ping reports whether the store answers, for health checks.
	Ping(ctx context.Context) error
}

// ApplyFunc applies one event's business writes inside tx.
type ApplyFunc func(ctx context.Context, tx Tx) error

// Claim describes the event a [Store] claims. Only EventID is required; the
// rest is stored in the ledger for operators.
type Claim struct {
	EventID    string
	EventType  string
	ObjectID   string // data.object.id, e.g. in_...
	Account    string // the connected account, for Stripe Connect
	Livemode   bool
	ReceivedAt time.Time // when the delivery arrived; zero means now
	// Outcome is what Run records when apply is nil: OutcomeIgnored or
	// OutcomeProcessed. It is ignored when apply is not nil.
	Outcome Outcome
	// Guards are natural keys apply is expected to claim with [Tx.Guard].
	// A store may claim them together with the event, before apply runs, and
	// answer Guard from that claim: [PgxStore] does, in the claim's round
	// trip. It is only a hint: the results are those of Guard calls made by
	// apply, and a key apply never guards is released before the
	// transaction commits. [Handler] fills it from the actions declared with
	// ActionSpec.KeyIsObjectID.
	Guards []GuardKey
}

// GuardKey is a natural key as [Tx.Guard] takes it.
type GuardKey struct{ Scope, Key string }

// check rejects a claim no store can run.
func (c *Claim) check() error {
	if c.EventID == "" {
		return errNoEventID
	}
	for i, g := range c.Guards {
		if g.Scope == "" || g.Key == "" {
			return fmt.Errorf("idempotency: Claim.Guards[%d] needs a non-empty scope and key (scope %q, key empty: %t)", i, g.Scope, g.Key == "")
		}
	}
	return nil
}

var errNoEventID = errors.New("idempotency: claim has no event id")

// Tx is the transaction a handler runs in. It is store-neutral; the
// PostgreSQL store's transaction also gives its pgx.Tx through [PgxTx].
// A Tx is valid only until the handler returns.
type Tx interface {
	// Guard claims the business key (scope, key) in this transaction and
	// reports whether this is the first claim of it. Like the event claim, it
	// commits or rolls back with the transaction, and a claim of the same key
	// held by another transaction in flight makes Guard wait for that
	// transaction to end. Claiming a key this transaction already holds
	// reports false.
	Guard(ctx context.Context, scope, key string) (first bool, err error)

	// AfterCommit registers fn to run after the transaction commits, in
	// registration order, on the goroutine that ran the handler and with a
	// context that is not cancelled with the request. It never runs when the
	// transaction rolls back or the event is skipped. A failure there cannot
	// undo the commit: use it for what may be lost or repeated safely, such as
	// enqueueing an email keyed by the event id. The funcs run before the
	// delivery is answered and outside Config.Timeout: keep them short.
	AfterCommit(fn func(ctx context.Context))

	// EventID is the id of the event this transaction claimed.
	EventID() string
	// EventType is the type of that event.
	EventType() string
}

// EventRecord is one row of a store's ledger of claimed events.
type EventRecord struct {
	EventID     string
	EventType   string
	ObjectID    string
	Account     string
	Livemode    bool
	Outcome     Outcome // OutcomeProcessed, OutcomeSkipped or OutcomeIgnored
	SkipReason  string
	ReceivedAt  time.Time
	ProcessedAt time.Time
}

// GuardRecord is one claimed natural key.
type GuardRecord struct {
	Scope     string
	Key       string
	EventID   string // the event whose transaction claimed it
	ClaimedAt time.Time
}

// maxAttempts bounds how often a store runs one event's transaction when
// the database fails it for a deadlock or a serialization conflict.
const maxAttempts = 5

func skipped(err error) bool {
	_, ok := skipReason(err)
	return ok
}

// skipReason reports whether err is or wraps a SkipError.
func skipReason(err error) (string, bool) {
	var s *SkipError
	if errors.As(err, &s) {
		return s.Reason, true
	}
	return "", false
}

// txState is the store-independent part of a transaction: its event, its
// after-commit funcs and whether it has ended.
type txState struct {
	claim Claim

	mu          sync.Mutex
	ended       bool
	afterCommit []func(ctx context.Context)
}

func (t *txState) EventID() string   { return t.claim.EventID }
func (t *txState) EventType() string { return t.claim.EventType }

func (t *txState) AfterCommit(fn func(ctx context.Context)) {
	if fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.afterCommit = append(t.afterCommit, fn)
	}
}

// checkOpen returns ErrTxDone once the transaction has ended.
func (t *txState) checkOpen() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrTxDone
	}
	return nil
}

// end marks the transaction ended and, when committed, runs the
// after-commit funcs with a context detached from ctx's cancellation. A
// panicking func does not stop the others; the panics come back as an
// *AfterCommitError.
func (t *txState) end(ctx context.Context, committed bool) error {
	t.mu.Lock()
	fns := t.afterCommit
	t.afterCommit = nil
	t.ended = true
	t.mu.Unlock()
	if !committed || len(fns) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	var panics []*PanicError
	for _, fn := range fns {
		if p := callRecover(ctx, fn); p != nil {
			panics = append(panics, p)
		}
	}
	if panics != nil {
		return &AfterCommitError{Panics: panics}
	}
	return nil
}

func callRecover(ctx context.Context, fn func(context.Context)) (p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = newPanicError(v)
		}
	}()
	fn(ctx)
	return nil
}

// AfterCommitError is returned by [Store.Run] together with
// OutcomeProcessed when the transaction committed but one or more
// AfterCommit funcs panicked. The event's writes are committed; the handler
// answers 200 and logs the panics.
type AfterCommitError struct {
	Panics []*PanicError
}

func (e *AfterCommitError) Error() string {
	return fmt.Sprintf("idempotency: %d after-commit func(s) panicked; first: %v", len(e.Panics), e.Panics[0].Value)
}

func (c Claim) receivedAt() time.Time {
	if c.ReceivedAt.IsZero() {
		return time.Now()
	}
	return c.ReceivedAt
}

// nilApplyOutcome is what a Run with a nil apply records.
func (c Claim) nilApplyOutcome() Outcome {
	if c.Outcome == OutcomeIgnored {
		return OutcomeIgnored
	}
	return OutcomeProcessed
}
