package idempotency

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgxRetentionSQL are the statements of Prune and Forget, on the store's
// schema.
type pgxRetentionSQL struct {
	tryLock, lock  string
	oldestAwaiting string
	// prune deletes a batch of each kind of row; count counts, in one
	// go, the rows each statement of prune would delete or change, on
	// its condition: a dry run's.
	prune, count                       pruneSQL
	xact, xactCommitted                string
	inboxState, inboxLock, forgetInbox string
	forgetEvent, forgetGuards, payload string
}

// pruneSQL are statements of a prune's steps, one per kind of row (see
// pruneDeleters), each taking the cutoff as $1.
type pruneSQL struct {
	eventIDs, events, deadLetters, deadTasks, objects, tasks, guards, order, taskArgs string
}

func newPgxRetentionSQL(schema string) pgxRetentionSQL {
	s := pgx.Identifier{schema}.Sanitize()
	inbox := s + `.idempotency_inbox`
	// Each statement chooses its batch once, in an InitPlan (= ANY(ARRAY(...)))
	// or a materialized CTE: as the inner side of a join (IN (SELECT ...))
	// PostgreSQL may run the choice again, for a rescan or to recheck a
	// row another transaction changed, and SKIP LOCKED then passes over
	// the rows it has just locked and takes others, so that one batch
	// deleted more than $2 rows.
	//
	// finished is the condition on inbox rows that finished before $1
	// and match cond (their kind and states).
	finished := func(cond string) string {
		return cond + ` AND finished_at IS NOT NULL AND finished_at < $1`
	}
	// finishedBatch selects a batch ($2 rows) of finished inbox rows
	// matching cond, the oldest finished first. SKIP LOCKED passes over
	// a row a redrive is moving.
	finishedBatch := func(cond string) string {
		return `event_id = ANY(ARRAY(SELECT event_id FROM ` + inbox + `
WHERE ` + finished(cond) + `
ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED))`
	}
	// deleteInbox deletes a batch of rows' finished inbox rows, the
	// oldest finished first, state by state in rows' order: a UNION ALL
	// of one read per state, each a range of
	// idempotency_inbox_finished_idx in its order, under one LIMIT, so
	// that a batch reads the rows it deletes (and the index entries of
	// those the batches before it deleted) however many rows the table
	// keeps. With the states in one condition (state IN (...)), no range
	// of that index in finished_at's order, PostgreSQL chose a
	// sequential scan, which read every row kept before the rows it took,
	// and the whole table for a step's last batch: with 750,000 expired
	// events in an inbox of 1.5 million rows, 1.4 to 4.2 s, under the
	// prune lock. Each read has its own LIMIT and SKIP LOCKED (passing
	// over a row a redrive is moving), and the Append starts no read once
	// the LIMIT has its rows, so a batch locks at most $2 rows.
	deleteInbox := func(rows inboxRows) string {
		reads := make([]string, len(rows.states))
		for i, state := range rows.states {
			reads[i] = `SELECT event_id FROM (SELECT event_id FROM ` + inbox + `
WHERE ` + finished(inboxRows{rows.kind, []string{state}}.cond()) + `
ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS ` + state + `_rows`
		}
		return `DELETE FROM ` + inbox + ` WHERE event_id = ANY(ARRAY(` + strings.Join(reads, `
UNION ALL `) + `
LIMIT $2))
RETURNING event_id`
	}
	// countInbox counts the finished inbox rows.
	countInbox := func(cond string) string {
		return `SELECT count(*) FROM ` + inbox + ` WHERE ` + finished(cond)
	}
	// older is the condition on rows of a (scope, key) table older than
	// $1 by column at.
	older := func(at string) string { return at + ` < $1` }
	// deleteByKey deletes a batch of rows of a (scope, key) table older
	// than $1 by column at, walking the primary key (scope, key) from
	// ($3, $4), so that a run reads each row it keeps once instead of
	// once per batch.
	deleteByKey := func(table, key, at string) string {
		t := s + `.` + table
		return `WITH batch AS MATERIALIZED (SELECT scope, ` + key + ` FROM ` + t + `
WHERE ` + older(at) + ` AND (scope, ` + key + `) > ($3, $4)
ORDER BY scope, ` + key + ` LIMIT $2 FOR UPDATE SKIP LOCKED),
d AS (DELETE FROM ` + t + ` AS t USING batch WHERE (t.scope, t.` + key + `) = (batch.scope, batch.` + key + `)
RETURNING t.scope, t.` + key + `)
SELECT count(*) OVER (), scope, ` + key + ` FROM d ORDER BY scope DESC, ` + key + ` DESC LIMIT 1`
	}
	// countByKey counts the rows deleteByKey deletes.
	countByKey := func(table, at string) string {
		return `SELECT count(*) FROM ` + s + `.` + table + ` WHERE ` + older(at)
	}
	// A claim whose event is in the inbox still to be applied or
	// redriven is what answers that copy duplicate: it stays. The inbox
	// is asked about each claim by its primary key, in a scalar subquery:
	// a NOT EXISTS became an anti join against every unfinished inbox
	// row, which with a backlog and statistics taken before it compared
	// each claim of a batch with each pending row.
	claims := `e.processed_at < $1 AND NOT coalesce((SELECT i.kind = 'event' AND i.state IN ('pending', 'processing', 'failed', 'dead_letter')
    FROM ` + inbox + ` AS i WHERE i.event_id = e.event_id), false)`
	// The rows of the inbox's steps.
	var (
		events      = inboxRows{`event`, []string{`processed`, `skipped`, `ignored`}}
		tasks       = inboxRows{`task`, []string{`processed`, `skipped`}}
		deadLetters = inboxRows{`event`, []string{`dead_letter`}}
		deadTasks   = inboxRows{`task`, []string{`dead_letter`}}
		// A finished task whose arguments are still to clear: empty is
		// no JSON, so it tells cleared arguments from any given.
		taskArgs = tasks.cond() + ` AND payload <> ''`
	)
	// The tables of the (scope, key) steps, and their columns of when.
	const (
		guards, guardsAt = `idempotency_guards`, `claimed_at`
		order, orderAt   = `idempotency_order`, `created`
		// A row whose fetch never committed (no fetched_at) says
		// nothing a missing row does not.
		objects, objectsAt = `idempotency_objects`, `coalesce(fetched_at, '-infinity')`
	)
	return pgxRetentionSQL{
		// One batch at a time across every replica; the key is the
		// schema's, as Migrate's is.
		tryLock: `SELECT pg_try_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`,
		// lock is run after noLockTimeout: the function in FROM takes
		// the lock before the select list puts lock_timeout back.
		lock: `SELECT ` + restoreLockTimeout + ` IS NOT NULL FROM pg_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`,
		// A batch that changed rows reads its transaction's id, to look
		// for it committed when its COMMIT's answer is lost.
		xact:          `SELECT txid_current()`,
		xactCommitted: xactStateSQL("$1", "txid_status($1) = 'committed'"),
		// The oldest event still awaiting, whose keys stay (keepKeysOf):
		// the least of each state's oldest, each read on
		// idempotency_inbox_state_idx from its oldest row. With the state
		// written as equality, PostgreSQL read idempotency_inbox_received_at_idx
		// instead, from the inbox's oldest row, and passed over every
		// finished event older than the backlog; a range of one state it
		// does not take for a constant, and only the (state, received_at)
		// index gives the order asked.
		oldestAwaiting: `SELECT least(` + oldestIn(inbox, "pending") + `,
    ` + oldestIn(inbox, "processing") + `,
    ` + oldestIn(inbox, "failed") + `,
    ` + oldestIn(inbox, "dead_letter") + `)`,
		prune: pruneSQL{
			eventIDs: `DELETE FROM ` + s + `.idempotency_events WHERE event_id = ANY(ARRAY(SELECT e.event_id FROM ` + s + `.idempotency_events AS e
WHERE ` + claims + `
LIMIT $2 FOR UPDATE OF e SKIP LOCKED))
RETURNING event_id`,
			events:      deleteInbox(events),
			tasks:       deleteInbox(tasks),
			deadLetters: deleteInbox(deadLetters),
			deadTasks:   deleteInbox(deadTasks),
			// A finished task's arguments are cleared, its row kept. The
			// batch is read on idempotency_inbox_task_args_idx (009), which
			// holds the tasks still to clear, in its order: without the ORDER
			// BY, PostgreSQL, which takes an empty payload for as rare among
			// tasks as among events, scanned the table past every task
			// cleared.
			taskArgs: `UPDATE ` + inbox + ` SET payload = '' WHERE ` + finishedBatch(taskArgs),
			guards:   deleteByKey(guards, `key`, guardsAt),
			objects:  deleteByKey(objects, `object_id`, objectsAt),
			order:    deleteByKey(order, `key`, orderAt),
		},
		count: pruneSQL{
			eventIDs:    `SELECT count(*) FROM ` + s + `.idempotency_events AS e WHERE ` + claims,
			events:      countInbox(events.cond()),
			tasks:       countInbox(tasks.cond()),
			deadLetters: countInbox(deadLetters.cond()),
			deadTasks:   countInbox(deadTasks.cond()),
			taskArgs:    countInbox(taskArgs),
			guards:      countByKey(guards, guardsAt),
			objects:     countByKey(objects, objectsAt),
			order:       countByKey(order, orderAt),
		},
		// inboxState reads the row as last committed, without waiting:
		// while an attempt applies the event it is processing, and Forget
		// refuses it rather than wait for the attempt and then forget the
		// event it has just applied. A row committed final is locked only
		// for a moment, by a prune batch deleting it, a redrive moving it
		// back or another Forget: inboxLock waits for them, and Forget
		// compares what it then finds with what it read.
		inboxState:   `SELECT state, kind, attempt, attempted_at FROM ` + inbox + ` WHERE event_id = $1`,
		inboxLock:    `SELECT state, kind, attempt, attempted_at FROM ` + inbox + ` WHERE event_id = $1 FOR UPDATE`,
		forgetInbox:  `DELETE FROM ` + inbox + ` WHERE event_id = $1`,
		forgetEvent:  `DELETE FROM ` + s + `.idempotency_events WHERE event_id = $1`,
		forgetGuards: `DELETE FROM ` + s + `.idempotency_guards WHERE event_id = $1`,
		payload:      `SELECT payload FROM ` + inbox + ` WHERE event_id = $1 AND payload <> ''`,
	}
}

// inboxRows are the inbox rows of a prune's step: of kind, in one of
// states (constants).
type inboxRows struct {
	kind   string
	states []string
}

// cond is the condition on the rows: kind = '<kind>' AND state = '<state>',
// or state IN (...) for more than one.
func (r inboxRows) cond() string {
	if len(r.states) == 1 {
		return `kind = '` + r.kind + `' AND state = '` + r.states[0] + `'`
	}
	return `kind = '` + r.kind + `' AND state IN ('` + strings.Join(r.states, `', '`) + `')`
}

// oldestIn is a subquery of when the oldest event in state (a constant)
// was received in the inbox table, or NULL.
func oldestIn(inbox, state string) string {
	return `(SELECT received_at FROM ` + inbox + `
      WHERE state >= '` + state + `' AND state <= '` + state + `' AND kind = 'event'
      ORDER BY state, received_at LIMIT 1)`
}

// Prune deletes what r no longer keeps (see [Retention]), in batches of
// r.BatchSize rows, each in its own short transaction: claimed event ids,
// finished inbox events, dead letters, [OnCurrent]'s rows of objects not
// fetched within r.EventIDs, then finished tasks when r keeps them for a
// time, the arguments of finished tasks older than r.Payloads (cleared,
// the rows kept), and guards when r keeps them for a time. A row that a
// transaction in flight holds is passed over, never waited for, so
// deliveries and workers are not blocked.
//
// One batch runs at a time across every replica on the database: a batch
// that finds another prune's batch in flight waits for it (a role's
// lock_timeout does not cut that wait), except the first, which returns
// [ErrPruneRunning] and deletes nothing; run [PruneEvery] on every
// replica and one of them does the work at a time.
//
// A Retention that breaks a rule is refused before anything is deleted.
// When ctx is done, Prune stops between batches and returns the report so
// far with ctx's error: every batch reported is committed, none is half
// done. A batch whose COMMIT went through while its connection dropped
// before the answer is looked up on another connection, again while its
// transaction is still in progress (its COMMIT carried out late, or
// waiting for synchronous replication), and counted; only when that
// look-up fails too (the database went down as it committed) is it
// missing from the report, which is then short, never over: the rows are
// changed all the same, and the next batch takes the rows after them. A
// batch whose COMMIT never reached the server, its session still idle in
// transaction half a second after the failed COMMIT, has that session
// ended: the batch rolls back, and Prune stops with the COMMIT's error,
// wrapping [ErrStoreUnavailable], its rows left to the next prune. A
// batch whose transaction is still in progress 5 seconds after the failed
// COMMIT is missing from the report too, and Prune stops there with an
// error that says so, wrapping [ErrStoreUnavailable]: not
// [ErrPruneRunning], although that transaction holds the prune lock until
// it ends. Claims deleted from the ledger are dropped from this process's
// memory of recent ids too, as are inbox rows deleted; another replica
// remembers an id at most PgxConfig.RecentClaimsTTL after it last met it,
// far inside any window.
//
// With r.DryRun, Prune counts what it would delete and clear, and changes
// nothing: each count on its step's condition, all in one read-only
// REPEATABLE READ transaction, so that they read one snapshot (the
// oldest event awaiting, whose keys are kept, included) and the report is
// the one a prune would return on the rows as that snapshot has them. It
// locks no row, so it also counts the rows a prune would pass over while
// a transaction holds them, and does not take the prune lock: it runs
// beside another replica's prune (never [ErrPruneRunning]), which may
// delete some of what it counts meanwhile. It writes nothing, and runs
// where the database may only be read (default_transaction_read_only).
// When its session ends midway (a failover, pg_terminate_backend), it
// runs again from the start on another connection, in a new snapshot.
func (s *PgxStore) Prune(ctx context.Context, r Retention) (PruneReport, error) {
	if err := s.made("PgxStore.Prune"); err != nil {
		return PruneReport{}, err
	}
	var rep PruneReport
	if err := r.check(); err != nil {
		return rep, err
	}
	c, err := r.cutoffs()
	if err != nil {
		return rep, err
	}
	if r.DryRun {
		return s.pruneDryRun(ctx, &r, c)
	}
	var oldest pgtype.Timestamptz
	// A read: on a connection whose session ended while it sat idle it
	// is read again on another, as the batches are.
	if _, err := s.readRow(ctx, s.retention.oldestAwaiting, nil, &oldest); err != nil {
		return rep, errorf("prune: %w", err)
	}
	c.keepKeysOf(oldest.Time, r.EventIDs)
	first := true
	// batch runs do, which deletes at most r.BatchSize rows, in a
	// transaction under the prune lock.
	//
	// A batch whose COMMIT went through while its connection dropped
	// before the answer (a session terminated as it waited for
	// synchronous replication, a network cut) is found committed and
	// counted; taken for one that committed nothing, it was run again,
	// took the next rows, and the report missed the rows it had changed.
	batch := func(ctx context.Context, do func(tx pgx.Tx) (int, error)) (int, error) {
		var n int
		err := retryStale(ctx, func() error {
			var xact int64 // set once do changed rows
			err := pgx.BeginTxFunc(ctx, s.db, readCommitted, func(tx pgx.Tx) error {
				lockSQL := s.retention.tryLock
				if !first {
					// The wait for another replica's batch is on the
					// store's own lock: lock_timeout does not cut it; it
					// is back in force for the batch's statements.
					if _, err := tx.Exec(ctx, noLockTimeout); err != nil {
						return err
					}
					lockSQL = s.retention.lock
				}
				var got bool
				if err := tx.QueryRow(ctx, lockSQL, s.cfg.Schema).Scan(&got); err != nil {
					return err
				}
				if !got {
					return ErrPruneRunning
				}
				var err error
				if n, err = do(tx); err != nil || n == 0 {
					return err
				}
				return tx.QueryRow(ctx, s.retention.xact).Scan(&xact)
			})
			if err == nil {
				return nil
			}
			switch s.lostCommitState(ctx, xact, err, s.retention.xactCommitted, xact) {
			case xactCommitted:
				return nil
			case xactInProgress:
				// Not run again: the batch would find its own
				// transaction holding the prune lock, and be taken for
				// another prune's.
				return errorf("%w: a batch's COMMIT went unanswered (%v), and its transaction was still in progress %v later: "+
					"its rows may yet be changed, and are left out of the report", ErrStoreUnavailable, err, s.lostCommitWait)
			}
			return err
		})
		first = false
		return n, err
	}
	// byID deletes from a table keyed by event id; the ids deleted are
	// dropped from this process's memories of recent ids once their batch
	// committed.
	byID := func(sql string) pruneDeleter {
		return func(ctx context.Context, n int, cutoff time.Time) (int, error) {
			var ids []string
			deleted, err := batch(ctx, func(tx pgx.Tx) (int, error) {
				rows, err := tx.Query(ctx, sql, cutoff, n)
				if err != nil {
					return 0, err
				}
				ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return len(ids), err
			})
			if err == nil {
				for _, id := range ids {
					s.forgetLocal(id)
				}
			}
			return deleted, err
		}
	}
	// byKey deletes from a (scope, key) table: each batch goes on from the
	// last key, in the database's order, that the one before deleted and
	// committed. A batch whose commit failed deleted nothing: run again
	// (its session ended), it starts where it did.
	byKey := func(sql string) pruneDeleter {
		var scope, key string
		return func(ctx context.Context, n int, cutoff time.Time) (int, error) {
			var lastScope, lastKey string
			deleted, err := batch(ctx, func(tx pgx.Tx) (int, error) {
				var deleted int
				err := tx.QueryRow(ctx, sql, cutoff, n, scope, key).Scan(&deleted, &lastScope, &lastKey)
				if errors.Is(err, pgx.ErrNoRows) {
					return 0, nil
				}
				return deleted, err
			})
			if err == nil && deleted > 0 {
				scope, key = lastScope, lastKey
			}
			return deleted, err
		}
	}
	// updated runs sql, which changes a batch of rows and keeps them.
	updated := func(sql string) pruneDeleter {
		return func(ctx context.Context, n int, cutoff time.Time) (int, error) {
			return batch(ctx, func(tx pgx.Tx) (int, error) {
				tag, err := tx.Exec(ctx, sql, cutoff, n)
				return int(tag.RowsAffected()), err
			})
		}
	}
	q := s.retention.prune
	steps := pruneSteps(&rep, c, pruneDeleters{
		eventIDs:    byID(q.eventIDs),
		events:      byID(q.events),
		deadLetters: byID(q.deadLetters),
		deadTasks:   byID(q.deadTasks),
		objects:     byKey(q.objects),
		tasks:       byID(q.tasks),
		guards:      byKey(q.guards),
		order:       byKey(q.order),
		taskArgs:    updated(q.taskArgs),
	}, false)
	return rep, s.pruneErr(ctx, runPrune(ctx, &r, &rep, steps))
}

// pruneDryRun counts what a prune with r would delete and clear, from c
// and the oldest event awaiting in the inbox, in one read-only REPEATABLE
// READ transaction: every count, and that event, read one snapshot. It
// locks no row and does not take the prune lock, so it neither waits for
// another replica's prune nor holds one up.
func (s *PgxStore) pruneDryRun(ctx context.Context, r *Retention, c pruneCutoffs) (PruneReport, error) {
	var rep PruneReport
	// It only reads: on a connection whose session ended while it sat
	// idle, or midway, it is run again, from the start, on another: from
	// c as given, the keys' cutoffs moved back for the oldest event
	// awaiting in the new snapshot only.
	err := retryStale(ctx, func() error {
		rep = PruneReport{}
		c := c
		return s.inDryRunTx(ctx, func(tx pgx.Tx) error {
			var oldest pgtype.Timestamptz
			if err := tx.QueryRow(ctx, s.retention.oldestAwaiting).Scan(&oldest); err != nil {
				return err
			}
			c.keepKeysOf(oldest.Time, r.EventIDs)
			count := func(sql string) pruneDeleter {
				return func(ctx context.Context, _ int, cutoff time.Time) (int, error) {
					var n int
					err := tx.QueryRow(ctx, sql, cutoff).Scan(&n)
					return n, err
				}
			}
			q := s.retention.count
			return runPrune(ctx, r, &rep, pruneSteps(&rep, c, pruneDeleters{
				eventIDs: count(q.eventIDs), events: count(q.events), deadLetters: count(q.deadLetters),
				deadTasks: count(q.deadTasks), objects: count(q.objects), tasks: count(q.tasks),
				guards: count(q.guards), order: count(q.order), taskArgs: count(q.taskArgs),
			}, true))
		})
	})
	return rep, s.pruneErr(ctx, err)
}

// inDryRunTx runs fn in a dry run's transaction: snapshotReadOnly, with
// dryRunSettings.
func (s *PgxStore) inDryRunTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.db, snapshotReadOnly, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dryRunSettings); err != nil {
			return err
		}
		return fn(tx)
	})
}

// snapshotReadOnly is the transaction of a dry run's reads: one snapshot,
// writing nothing.
var snapshotReadOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// dryRunSettings are the planner settings of a dry run's transaction. The
// count of the claims asks the inbox about each expired claim, and the
// planner prices that by every claim the range may hold: on a ledger of
// 1.5 million claims, 200,000 of them expired, past jit_above_cost and
// the inlining and optimizing thresholds, and compiling the plan took
// 450 to 600 ms of the count's 1.3 to 1.8 s, for a statement run once.
const dryRunSettings = `SELECT set_config('jit', 'off', true)`

// pruneErr is err as Prune returns it: ErrPruneRunning and ctx's error as
// they are, another wrapped as the store unavailable when it is.
func (s *PgxStore) pruneErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPruneRunning), ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	return errorf("prune: %w", s.unavailableErr(err))
}

// Forget deletes what makes eventID known: its claim in the ledger, the
// guards its transaction claimed, and its row in the inbox, in one
// transaction, and reports whether there was any. A delivery of the event
// afterwards, a resend from Stripe's Dashboard or a [Handler.Recover], is
// applied again as new: use it after undoing an event's effects by hand,
// to have it processed again. The tasks it enqueued stay done (enqueueing
// them again does nothing), and CheckOrder's record of it stays: applying
// it again, [CheckOrder] answers [OrderNewer] when it is still the newest
// event applied for the key, [OrderOlder] when one of a later second was
// applied since, and [OrderTie] when another of its own second was (either
// way round), as for any event.
//
// An event still to be applied in the inbox (pending, processing, failed)
// is refused with [ErrUnfinished], at once, also while an attempt at it is
// in flight: Forget does not wait for the attempt, which would then have
// it forget the event that attempt has just applied. A finished event's
// row that a prune batch or a redrive holds for a moment is waited for:
// once pruned, the rest is forgotten; moved back to pending, or attempted
// again meanwhile, it is refused with ErrUnfinished. A first delivery
// that a [Handler] (not the inbox) is applying as Forget runs is not
// seen: its claim is not committed yet, so Forget neither waits for it
// nor refuses it, and reports false when nothing else made the event
// known; once that delivery commits the event is known. Forget again
// after it was answered. A task's id is refused with [ErrForgetTask].
// This process forgets
// the id at once, and inbox workers always ask the database; but a
// delivery that reaches another replica may be answered duplicate from its
// memory of recent ids for up to PgxConfig.RecentClaimsTTL (1 minute by
// default), and a copy answered duplicate is not applied: resend the event
// after that.
func (s *PgxStore) Forget(ctx context.Context, eventID string) (bool, error) {
	if err := s.made("PgxStore.Forget"); err != nil {
		return false, err
	}
	if err := checkEventID("forget", eventID); err != nil {
		return false, err
	}
	var found bool
	err := retryStale(ctx, func() error {
		found = false
		return pgx.BeginTxFunc(ctx, s.db, readCommitted, func(tx pgx.Tx) error {
			var committed forgetRow
			err := committed.read(ctx, tx, s.retention.inboxState, eventID)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return err
			case committed.kind == KindTask:
				return errorf("forget %q: %w", eventID, ErrForgetTask)
			case !committed.state.Final():
				return errorf("forget %q: %w (inbox state %s)", eventID, ErrUnfinished, committed.state)
			default:
				// Final: no attempt holds it. Wait for a prune batch or
				// a redrive that does.
				var locked forgetRow
				err := locked.read(ctx, tx, s.retention.inboxLock, eventID)
				switch {
				case errors.Is(err, pgx.ErrNoRows): // pruned meanwhile
				case err != nil:
					return err
				case !locked.state.Final():
					return errorf("forget %q: %w (inbox state %s)", eventID, ErrUnfinished, locked.state)
				case !locked.same(committed):
					return errorf("forget %q: %w (attempted again while forget waited for its inbox row)", eventID, ErrUnfinished)
				default:
					found = true
				}
			}
			for _, sql := range []string{s.retention.forgetInbox, s.retention.forgetEvent, s.retention.forgetGuards} {
				tag, err := tx.Exec(ctx, sql, eventID)
				if err != nil {
					return err
				}
				found = found || tag.RowsAffected() > 0
			}
			return nil
		})
	})
	if errors.Is(err, ErrUnfinished) || errors.Is(err, ErrForgetTask) {
		return false, err
	}
	if err != nil {
		return false, errorf("forget: %w", s.unavailableErr(err))
	}
	s.forgetLocal(eventID)
	return found, nil
}

// forgetRow is what Forget reads of an inbox row.
type forgetRow struct {
	state       InboxState
	kind        InboxKind
	attempt     int
	attemptedAt pgtype.Timestamptz
}

func (r *forgetRow) read(ctx context.Context, tx pgx.Tx, sql, eventID string) error {
	return tx.QueryRow(ctx, sql, eventID).Scan(&r.state, &r.kind, &r.attempt, &r.attemptedAt)
}

// same reports whether r is the row o was: no attempt since.
func (r forgetRow) same(o forgetRow) bool {
	return r.state == o.state && r.attempt == o.attempt && r.attemptedAt.Valid == o.attemptedAt.Valid &&
		r.attemptedAt.Time.Equal(o.attemptedAt.Time)
}

// forgetLocal drops eventID from this process's memories of recent ids.
func (s *PgxStore) forgetLocal(eventID string) {
	if s.local != nil {
		s.local.forget(eventID)
	}
	if s.stored != nil {
		s.stored.forget(eventID)
	}
}

// inboxPayload implements inboxBackend.
func (s *PgxStore) inboxPayload(ctx context.Context, eventID string) ([]byte, bool, error) {
	var p []byte
	found, err := s.readRow(ctx, s.retention.payload, []any{eventID}, &p)
	return p, found, err
}
