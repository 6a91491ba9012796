package idempotency

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// txChain lets the attempts of one Inbox worker share round trips on
// PostgreSQL. When an attempt's transaction is ready to commit and the
// worker already holds its next event, the COMMIT travels in one batch
// with the next event's claim, as COMMIT AND CHAIN: the next transaction
// begins on the same connection the moment the first one commits. Each
// event still has a transaction of its own, with its own commit; only
// the round trip between them is saved (three per event become two).
//
// A chain belongs to one worker goroutine and is not safe for concurrent
// use.
type txChain struct {
	// next returns the claim of the worker's next event when the worker
	// holds one that is ready to be applied at once, and nil otherwise.
	next func() *Claim
	// begun is the transaction the last commit began, and claimed the
	// event of, for the Run that applies that event.
	begun *begunClaim
	// chained counts the commits that began the next event's
	// transaction.
	chained int
}

// begunClaim is a transaction begun by a chained commit, holding its
// event's claim.
type begunClaim struct {
	eventID string
	tx      pgx.Tx
	early   []earlyGuard
}

// take returns the transaction begun for the claim of eventID, if the
// last commit began one, and forgets it.
func (ch *txChain) take(eventID string) *begunClaim {
	if ch == nil || ch.begun == nil {
		return nil
	}
	b := ch.begun
	ch.begun = nil
	if b.eventID != eventID { // not the event the worker applies next: never used
		rollback(context.Background(), b.tx)
		return nil
	}
	return b
}

// discard rolls back a begun transaction that no attempt took.
func (ch *txChain) discard(ctx context.Context) {
	if ch != nil && ch.begun != nil {
		rollback(ctx, ch.begun.tx)
		ch.begun = nil
	}
}

// chainOf is the chain of an inbox attempt's claim, or nil.
func (c *Claim) chainOf() *txChain {
	if c.fence == nil {
		return nil
	}
	return c.fence.chain
}

// commit commits tx. With a chain whose worker holds its next event, the
// COMMIT AND CHAIN and the next event's claim go in one round trip; the
// transaction begun is left in ch.begun when it claimed the event, and
// rolled back otherwise (that event's own Run then begins as usual). The
// error is the commit's alone: tx's event committed when it is nil.
func (s *PgxStore) commit(ctx context.Context, tx pgx.Tx, ch *txChain) error {
	var next *Claim
	if ch != nil && ch.next != nil {
		next = ch.next()
	}
	if next == nil {
		return tx.Commit(ctx)
	}
	batch := &pgx.Batch{}
	batch.Queue(`COMMIT AND CHAIN`)
	// The server answers the batch as a whole: a claim that waited for a
	// lock (the next event claimed by another transaction, a guard key it
	// claims early held by one) would hold back the answer of the commit
	// that succeeded, until the attempt timed out and reported it failed.
	// It waits for no lock here: rather than wait, it fails, and the next
	// event begins on its own (where it waits within its own attempt). The
	// setting in force is restored after the claim; a skip's rollback to
	// the savepoint brings the short one back, for statements on rows the
	// transaction holds already.
	batch.Queue(keepLockTimeout + `set_config('lock_timeout', '10ms', true)`)
	layout := s.queueClaim(batch, next, OutcomeProcessed, true)
	batch.Queue(`SELECT ` + restoreLockTimeout)
	results := tx.SendBatch(ctx, batch)
	tag, err := results.Exec()
	if err == nil && tag.String() != "COMMIT" {
		// The transaction had failed: PostgreSQL rolled it back.
		err = pgx.ErrTxCommitRollback
	}
	if err != nil {
		_ = results.Close()
		rollback(ctx, tx)
		return err
	}
	early, _, claimed, err := layout.read(results, 1)
	if err != nil || !claimed {
		rollback(ctx, tx)
		return nil
	}
	ch.chained++
	ch.begun = &begunClaim{eventID: next.EventID, tx: tx, early: early}
	return nil
}
