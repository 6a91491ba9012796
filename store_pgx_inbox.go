package idempotency

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The inbox on PostgreSQL: the table idempotency_inbox (migration 002).
// Every time in it is the inbox's clock, passed in, never now(): tests drive
// retries and lease expiries with a fake clock.
//
// Leases are serialised per schema by a transaction-scoped advisory lock
// taken in a statement of its own before the lease statement. Under READ
// COMMITTED each statement reads a snapshot taken when it starts, so the
// lease statement, started once the lock is held, sees every lease that
// committed before it: FOR UPDATE SKIP LOCKED alone keeps two leases from
// taking one event, but not from taking two events of one object (two
// statements may each, on their own snapshot, find a different event the
// first of its object, when an earlier event of the object arrives late or
// is redriven meanwhile). Leases are short, a few milliseconds; the events'
// transactions run outside the lock.

var (
	_ inboxBackend  = (*PgxStore)(nil)
	_ inboxNotifier = (*PgxStore)(nil)
	_ inboxClock    = (*PgxStore)(nil)
)

// pgxInboxSQL are the inbox's statements, on the store's schema.
type pgxInboxSQL struct {
	enqueue, enqueueMany, enqueueTask, finish, skip, lock, deadLetter string
	lease, settle, redrive, redriveCount, stats, list, heldBy         string
	statsCount                                                        string                // Stats' count of a group its estimate does not know
	estimate                                                          map[inboxGroup]string // Stats' estimates
	channel                                                           string                // notifications
}

// inboxColumns are the columns of an InboxRecord, in the order of
// InboxRecord.columns: every read of a record (the lease's, its
// dead-lettered ones', List's, Lookup's, HeldBy's) reads them all. The
// redrive history (redrives, redriven_at: migration 011) only a redrive
// writes; the ingest's insert and an attempt's end do not name it.
const inboxColumns = `kind, event_id, event_type, object_id, account, livemode, api_version, created,
state, attempt, last_error, received_at, attempted_at, next_attempt_at, finished_at, lease_until,
redrives, redriven_at`

func newPgxInboxSQL(schema string) pgxInboxSQL {
	t := pgx.Identifier{schema}.Sanitize() + `.idempotency_inbox`
	estimate := map[inboxGroup]string{}
	for _, g := range finishedGroups() {
		if !estimable(g.state) {
			continue
		}
		estimate[g] = `EXPLAIN (FORMAT JSON) SELECT FROM ` + t + ` WHERE kind = '` + string(g.kind) + `' AND state = '` + string(g.state) + `'`
	}
	// applying: a worker is applying row r at now: it is processing under
	// an unexpired lease, or past it in its fenced transaction still open
	// (the row is locked: the probe FOR SHARE SKIP LOCKED finds nothing).
	applying := func(r, now string) string {
		return `(` + r + `.state = 'processing' AND (` + r + `.lease_until > ` + now + ` OR NOT EXISTS (
                SELECT 1 FROM ` + t + ` AS probe WHERE probe.event_id = ` + r + `.event_id FOR SHARE SKIP LOCKED)))`
	}
	// free: i is the first event of its object still to apply, and no other
	// event of the object is being applied ($1 is now): processing under an
	// unexpired lease, or past its lease but with its fenced transaction
	// still open (the row is locked: the probe FOR SHARE SKIP LOCKED finds
	// nothing). An event that sorts after i and whose worker is presumed
	// dead does not hold i back. Both conditions are one probe of the
	// object's unfinished events on the object index, a few rows: asked
	// apart, the second would read the processing index, which holds an
	// entry for every event leased since the last vacuum (with 40,000
	// entries, one lease reads 39,000 buffers).
	free := `(i.object_id = '' OR NOT EXISTS (SELECT 1 FROM ` + t + ` AS o
        WHERE o.object_id = i.object_id AND o.object_id <> '' AND o.account = i.account
          AND o.state IN ('pending', 'failed', 'processing') AND o.event_id <> i.event_id
          AND ((o.created, o.event_id COLLATE "C") < (i.created, i.event_id COLLATE "C")
            OR ` + applying("o", "$1") + `)))`
	// fenced: the row of event $1 at attempt $2 begun at attemptedAt,
	// still processing. Its state is compared in the "C" collation, which
	// gives the same answer (text equality is bytewise in every collation a
	// database can default to) but matches no index: the planner finds the
	// row through the primary key. Compared plainly, state = 'processing'
	// lets the planner read the lease index or the state index instead,
	// which statistics taken while nothing was being applied show empty,
	// and which hold an entry for every event leased since the last
	// vacuum: every attempt's finish would read them all.
	fenced := func(attemptedAt string) string {
		return `event_id = $1 AND attempt = $2 AND attempted_at = ` + attemptedAt + ` AND state = 'processing' COLLATE "C"`
	}
	leaseExpired := `format('` + leaseExpiredFormat + `', i.attempt)` // of the attempt before the update
	redriveWhere := `state = ANY ($1::text[])
  AND ($6 = '' OR kind = $6)
  AND (cardinality($2::text[]) = 0 OR event_id = ANY ($2::text[]))
  AND ($3 = '' OR event_type = $3)
  AND ($4::timestamptz IS NULL OR received_at >= $4) AND ($5::timestamptz IS NULL OR received_at < $5)
  AND ($7 = '' OR object_id = $7) AND ($8 = '' OR account = $8)`
	countKinds := `count(*) FILTER (WHERE kind = 'event'), count(*) FILTER (WHERE kind = 'task')`
	h := fnv.New64a()
	h.Write([]byte(schema))
	return pgxInboxSQL{
		estimate: estimate,
		enqueue: `INSERT INTO ` + t + ` (event_id, event_type, object_id, account, livemode, api_version, created,
    payload, state, received_at, next_attempt_at, finished_at, trace)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (event_id) DO NOTHING`,
		enqueueMany: `INSERT INTO ` + t + ` (event_id, event_type, object_id, account, livemode, api_version, created,
    payload, state, received_at, next_attempt_at, finished_at, trace)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::timestamptz[],
    $8::bytea[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::text[])
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id`,
		enqueueTask: `INSERT INTO ` + t + ` (kind, event_id, event_type, created, payload, state, received_at, next_attempt_at, trace)
VALUES ('task', $1, $2, $3, $4, 'pending', $3, $3, $5) ON CONFLICT (event_id) DO NOTHING`,
		// The lease still runs at $6, when the attempt begins (inboxFence.begun).
		finish: `UPDATE ` + t + ` SET state = $3, finished_at = $4, next_attempt_at = NULL, lease_until = NULL, last_error = ''
WHERE ` + fenced("$5") + ` AND lease_until > $6`,
		skip: `UPDATE ` + t + ` SET state = 'skipped' WHERE event_id = $1`,
		lock: `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.inbox.lease:' || $1, 0))`,
		deadLetter: `UPDATE ` + t + ` AS i
SET state = 'dead_letter', finished_at = $1, lease_until = NULL, next_attempt_at = NULL,
    last_error = ` + leaseExpired + `
WHERE i.event_id IN (SELECT event_id FROM ` + t + `
      WHERE state = 'processing' AND lease_until <= $1 AND attempt >= $2
      FOR UPDATE SKIP LOCKED)
RETURNING ` + inboxColumns + `, txid_current()`, // per dead letter only: the lease's transaction, for a COMMIT unanswered
		// Two ordered candidate sets, each read through its partial index
		// and stopping at the limit, merged by the time they came due. An
		// expired lease is taken alone (inboxBackend.inboxLease): the
		// lease stops before the first one unless it is the first.
		lease: `WITH expired AS (
    SELECT i.event_id, i.lease_until AS due_at, i.attempted_at, i.state FROM ` + t + ` AS i
    WHERE i.state = 'processing' AND i.lease_until <= $1 AND ` + free + `
    ORDER BY i.lease_until
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), due AS (
    SELECT i.event_id, i.next_attempt_at AS due_at, i.attempted_at, i.state FROM ` + t + ` AS i
    WHERE i.state IN ('pending', 'failed') AND i.next_attempt_at <= $1 AND ` + free + `
    ORDER BY i.next_attempt_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT event_id, due_at, attempted_at, state, expired FROM (
        SELECT event_id, due_at, attempted_at, state, expired,
            row_number() OVER w AS n, count(*) FILTER (WHERE expired) OVER w AS expired_so_far
        FROM (
            SELECT event_id, due_at, attempted_at, state, true AS expired FROM expired
            UNION ALL
            SELECT event_id, due_at, attempted_at, state, false FROM due
        ) AS candidates
        WINDOW w AS (ORDER BY due_at, event_id COLLATE "C" ROWS UNBOUNDED PRECEDING)
    ) AS ordered
    WHERE n <= $2 AND (n = 1 OR expired_so_far = 0)
), leased AS (
    UPDATE ` + t + ` AS i
    SET state = 'processing', attempt = i.attempt + 1, attempted_at = $1, lease_until = $3, next_attempt_at = NULL,
        last_error = CASE WHEN picked.expired THEN ` + leaseExpired + ` ELSE i.last_error END
    FROM picked
    WHERE i.event_id = picked.event_id
    RETURNING picked.due_at, picked.attempted_at AS prev_attempted_at, picked.state AS prev_state, picked.expired, i.*
)
SELECT ` + inboxColumns + `, payload, coalesce(seq, 0), trace, due_at, prev_attempted_at, prev_state, expired FROM leased ORDER BY due_at, event_id COLLATE "C"`,
		// An attempt that does not count ($9: a snoozed task, pending; an
		// event or task given back unapplied, in the state it had before
		// the lease) goes back one, showing the attempt time $8: the
		// snoozed run's, or the one before the lease given back. An
		// expired lease given back goes back to processing under the lease
		// it lost, which ended at $5.
		settle: `UPDATE ` + t + ` SET state = $3, last_error = $4, finished_at = $6,
    next_attempt_at = CASE WHEN $3 = 'processing' THEN NULL ELSE $5::timestamptz END,
    lease_until = CASE WHEN $3 = 'processing' THEN $5::timestamptz END,
    attempt = CASE WHEN $9 THEN attempt - 1 ELSE attempt END,
    attempted_at = CASE WHEN $9 THEN $8 ELSE attempted_at END
WHERE ` + fenced("$7"),
		// Counted by kind in the statement that moves them: both kinds
		// move at once, or neither.
		redrive: `WITH moved AS (UPDATE ` + t + ` SET state = 'pending', attempt = 0, next_attempt_at = $9, finished_at = NULL,
    redrives = redrives + 1, redriven_at = $9
WHERE ` + redriveWhere + `
RETURNING kind)
SELECT ` + countKinds + ` FROM moved`,
		redriveCount: `SELECT ` + countKinds + ` FROM ` + t + ` WHERE ` + redriveWhere,
		stats:        statsSQL(t),
		statsCount:   `SELECT count(*) FROM ` + t + ` WHERE kind = $1 AND state = $2 AND finished_at IS NOT NULL`,
		// One state is compared by equality, which the planner (planning
		// for the values, as for a connection's first runs of the
		// statement) takes for a constant: idempotency_inbox_state_idx
		// then gives the list's order, and the read stops at the limit.
		// As state = ANY of an array of one it did not, and a list of
		// dead letters older than most of the inbox could read the whole
		// inbox by receipt time. A later page's position is also a bound
		// of received_at alone, where an index read starts; its OR,
		// which breaks a tie, is not. An object is compared in the "C"
		// collation, as idempotency_inbox_object_id_idx (migration 012)
		// holds it, apart from the workers' probes (see that migration).
		list: `SELECT ` + inboxColumns + ` FROM ` + t + `
WHERE (cardinality($1::text[]) = 0 OR (cardinality($1::text[]) = 1 AND state = ($1::text[])[1])
    OR (cardinality($1::text[]) > 1 AND state = ANY ($1::text[])))
  AND ($2 = '' OR event_type = $2) AND ($3 = '' OR (object_id COLLATE "C" = $3 AND object_id <> ''))
  AND ($4::timestamptz IS NULL OR received_at >= $4) AND ($5::timestamptz IS NULL OR received_at < $5)
  AND (coalesce(cardinality($7::text[]), 0) = 0 OR event_id = ANY ($7::text[]))
  AND ($8 = '' OR kind = $8) AND ($9 = '' OR account = $9)
  AND ($10 = '' OR received_at <= $11)
  AND ($10 = '' OR received_at < $11 OR (received_at = $11 AND event_id COLLATE "C" < $10))
ORDER BY received_at DESC, event_id COLLATE "C" DESC
LIMIT $6`,
		// The free predicate seen from the held event, which waits unless
		// a worker is applying it: its object's unfinished events that
		// sort before it, then those after it that a worker holds, each
		// part read in order on the object index, as the lease reads them,
		// and stopping at its limit ($3). OFFSET 0 keeps the second part
		// on the object index: told that it wants processing rows, the
		// planner would read the processing index, which holds an entry
		// for every event leased since the last vacuum (see free).
		heldBy: `WITH i AS (
    SELECT object_id AS held_object, account AS held_account, created AS held_created, event_id AS held_id FROM ` + t + ` AS h
    WHERE event_id = $1 AND object_id <> '' AND state IN ('pending', 'failed', 'processing')
      AND NOT ` + applying("h", "$2") + `
), holders AS ((
    SELECT ` + inboxColumns + `, true AS earlier FROM ` + t + `, i
    WHERE object_id = held_object AND object_id <> '' AND account = held_account AND state IN ('pending', 'failed', 'processing')
      AND (created, event_id COLLATE "C") < (held_created, held_id COLLATE "C")
    ORDER BY created, event_id COLLATE "C"
    LIMIT $3
) UNION ALL (
    SELECT ` + inboxColumns + `, false FROM (
        SELECT ` + inboxColumns + ` FROM ` + t + `, i
        WHERE object_id = held_object AND object_id <> '' AND account = held_account AND state IN ('pending', 'failed', 'processing')
          AND (created, event_id COLLATE "C") > (held_created, held_id COLLATE "C")
        OFFSET 0
    ) AS o
    WHERE ` + applying("o", "$2") + `
    ORDER BY created, event_id COLLATE "C"
    LIMIT $3
))
SELECT ` + inboxColumns + `, earlier FROM holders
ORDER BY created, event_id COLLATE "C"`,
		channel: fmt.Sprintf("idempotency_inbox_%016x", h.Sum64()),
	}
}

// pgxQuerier runs statements outside an explicit transaction, each in its
// own: a *pgxpool.Pool, a *pgx.Conn (or a pgx.Tx).
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// autocommit calls fn with the store's db itself when it runs statements on
// its own (a pool or a connection), each statement then its own
// transaction: one round trip. Otherwise (a PgxBeginner that only begins)
// it calls fn in a transaction and commits it.
//
// A statement on its own runs at the session's default isolation
// (default_transaction_isolation, which a role or a database may set to
// repeatable read or serializable): there a conflicting write committed
// while it waited for a row fails it with a serialization failure, where
// read committed would read the row anew. Failed so, or by a deadlock,
// it committed nothing, and fn (every fn given here sends one statement,
// and sets what it reads anew on each call) runs again, up to maxAttempts
// calls in all: its new snapshot sees the write, as read committed would
// have.
//
// On a pool fn is called with a connection acquired for the call and
// given back however fn returns: the pool's Query and QueryRow keep the
// connection they acquired when its code panics as the statement starts
// (a pgx tracer), for as long as the pool lives.
func (s *PgxStore) autocommit(ctx context.Context, fn func(q pgxQuerier) error) error {
	if p, ok := s.db.(*pgxpool.Pool); ok {
		return s.retryConflicts(ctx, func() error {
			return p.AcquireFunc(ctx, func(c *pgxpool.Conn) error { return fn(c) })
		})
	}
	if q, ok := s.db.(pgxQuerier); ok {
		return s.retryConflicts(ctx, func() error { return fn(q) })
	}
	return pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error { return fn(tx) })
}

// autocommitIdempotent is autocommit for fn that may run twice with the effect
// of once (a read; an INSERT ... ON CONFLICT DO NOTHING): on a connection
// whose session ended while it sat idle in the pool (a failover, a
// pg_terminate_backend) it runs again on another (retryStale).
func (s *PgxStore) autocommitIdempotent(ctx context.Context, fn func(q pgxQuerier) error) error {
	return retryStale(ctx, func() error { return s.autocommit(ctx, fn) })
}

// inboxError translates err as every store method does, and names the
// operation.
func (s *PgxStore) inboxError(op string, err error) error {
	return errorf("inbox %s: %w", op, s.unavailableErr(err))
}

// inboxEnqueue implements inboxBackend: one INSERT ... ON CONFLICT DO
// NOTHING, committed on its own, in one round trip on a pool or a
// connection, and shared with the deliveries that arrive while earlier
// inserts are in flight (see ingest); none for an id this process stored
// or found stored before (PgxConfig.RecentClaims). It notifies nobody: a
// notifying transaction holds a global lock until its commit is flushed
// (see Inbox.notifyOthers).
func (s *PgxStore) inboxEnqueue(ctx context.Context, r *inboxRow) (bool, error) {
	if s.stored != nil && s.stored.has(r.EventID) {
		return false, nil
	}
	return s.enqueueBatched(ctx, r)
}

// leaseSettings are the planner settings of the lease transaction.
//
// The planner prices the lease's correlated subqueries by the whole
// backlog although the LIMIT stops it after a few rows; on a large inbox
// that estimate crosses jit_above_cost, and compiling the plan would
// cost a few hundred milliseconds, under the lease lock, per lease.
// For the same reason PostgreSQL never trusts the prepared lease's
// generic plan and plans it anew on every lease, which costs more than
// running it (0.4 ms against 0.2 on a 50,000-event backlog); the
// generic plan is the custom one: the partial indexes match the
// predicates and give the order, whatever the parameters. But it is
// planned once per connection, with the statistics of that moment: a
// connection that first leases while the inbox is small would keep a
// bitmap scan that reads and sorts every due event (50,000 of them:
// 200 ms per lease, the drain 40 times slower). Without sequential
// scans, bitmap scans and sorts the planner has one way left to read
// the candidates, the ordered partial indexes, whatever it estimates.
//
// lock_timeout 0: the lease lock is the store's own, held by another
// process's lease for as long as it runs, and a role's or database's
// lock_timeout, meant for business writes, would fail the lease whenever
// that one took longer. It waits for no other lock (rows are skipped
// when locked); statement_timeout and the context still bound it.
const leaseSettings = `SELECT set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true),
    set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
    set_config('lock_timeout', '0', true)`

// inboxLease implements inboxBackend. In one transaction at READ COMMITTED,
// sent with its commit as one batch (one round trip on a pool or a
// connection): the schema's lease lock, then dead-lettering the expired
// leases that used the last attempt (so that they no longer hold their
// objects back), then the lease itself.
//
// A panic in the code of the store's connections (a pgx tracer) is the
// lease's error (recoverConnsPanic), its connection given back or closed
// by the rollback. Its batch may have committed on the server before it:
// its events then wait, processing, for that lease to expire, each
// taken over at the cost of an attempt, as after a lease whose answer was
// lost.
func (s *PgxStore) inboxLease(ctx context.Context, now time.Time, limit int, lease time.Duration, maxAttempts int) (out []inboxRow, dead []InboxRecord, err error) {
	if limit <= 0 {
		return nil, nil, nil
	}
	defer s.recoverConnsPanic("lease", &err)
	out, dead, err = s.lease(ctx, now, limit, lease, maxAttempts)
	if err != nil {
		return nil, dead, s.inboxError("lease", err)
	}
	return out, dead, nil
}

// lease is inboxLease's transaction. When it fails after the
// dead-lettering statement answered, its COMMIT sent (its answer lost: a
// terminated session, a network cut), it looks on another connection
// whether its transaction committed after all
// (lostCommitState, by the transaction's id, which that statement
// answers with each dead letter), and returns the dead letters with the
// error when it did: the lease that moved them reports them, once. When
// that statement's answer was lost too (on a pool the batch's answers
// travel together), it cannot tell which it moved: they are not reported,
// as the README's Inbox mode says.
func (s *PgxStore) lease(ctx context.Context, now time.Time, limit int, lease time.Duration, maxAttempts int) (out []inboxRow, dead []InboxRecord, err error) {
	// READ COMMITTED whatever the server's default: the lease statement
	// must take its snapshot after the lock is granted.
	batch, tx, err := s.beginBatch(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, nil, err
	}
	batch.Queue(leaseSettings)
	batch.Queue(s.inbox.lock, s.cfg.Schema)
	deadAt := batch.Len()
	batch.Queue(s.inbox.deadLetter, now, maxAttempts)
	leaseAt := batch.Len()
	batch.Queue(s.inbox.lease, now, limit, now.Add(lease))
	// When it can, the commit travels in the batch too: the whole lease is
	// one round trip, and the lock is held no longer than the server
	// needs. Nothing is returned unless the commit succeeded.
	tx, results, commitQueued := s.sendBatch(ctx, batch, tx, true)
	var xact int64 // the transaction's id, answered with each dead letter
	defer func() {
		// The rollback (after a commit: nothing to do) before the
		// look-up: an error that left the transaction open (one the
		// client met reading the answers) would have it found in
		// progress on every look, up to lostCommitWait.
		rollback(ctx, tx)
		if err != nil && len(dead) > 0 && s.lostCommitState(ctx, xact, err, s.retention.xactCommitted, xact) != xactCommitted {
			dead = nil
		}
	}()
	for i := 0; i < batch.Len() && err == nil; i++ {
		var rows pgx.Rows
		switch i {
		case deadAt:
			if rows, err = results.Query(); err == nil {
				dead, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (InboxRecord, error) {
					return scanInboxRecordWith(row, &xact)
				})
			}
		case leaseAt:
			if rows, err = results.Query(); err == nil {
				out, err = pgx.CollectRows(rows, scanInboxRow)
			}
		default:
			_, err = results.Exec()
		}
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err == nil && !commitQueued {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return nil, dead, err
	}
	return out, dead, nil
}

// inboxSettle implements inboxBackend: one UPDATE fenced on the attempt.
// A panic in the code of the store's connections (a pgx tracer) is its
// error (recoverConnsPanic), as a settle that could not reach the
// database: the attempt's end is looked up, and left to the lease that
// takes the event over when it was not recorded.
func (s *PgxStore) inboxSettle(ctx context.Context, eventID string, attempt int, attemptedAt time.Time, st InboxState, lastError string, nextAt, now time.Time, uncounted bool, shownAttemptedAt time.Time) (_ bool, err error) {
	defer s.recoverConnsPanic("settle", &err)
	var finished time.Time
	if st.Final() { // failed, pending and processing (a snoozed task, a row given back) are not finished
		finished = now
	}
	var tag pgconn.CommandTag
	// An attempt that failed because the server went away (a restart, a
	// failover, a terminated session) is settled at once, on a pooled
	// connection that may have gone with it: settling again on another is
	// safe (the fence lets one UPDATE through), and without it the event
	// would wait for its lease to expire instead of its backoff.
	err = retryStale(ctx, func() error {
		return s.autocommit(ctx, func(q pgxQuerier) (err error) {
			tag, err = q.Exec(ctx, s.inbox.settle, eventID, attempt, string(st), storableText(lastError), optionalTime(nextAt), optionalTime(finished), attemptedAt, optionalTime(shownAttemptedAt), uncounted)
			return err
		})
	})
	if err != nil {
		return false, s.inboxError("settle", err)
	}
	return tag.RowsAffected() == 1, nil
}

// inboxRedrive implements inboxBackend: one UPDATE, or with f.DryRun one
// count, each counting the kinds apart.
func (s *PgxStore) inboxRedrive(ctx context.Context, f RedriveFilter, now time.Time) (events, tasks int, err error) {
	ids := f.EventIDs
	if ids == nil {
		ids = []string{}
	}
	// A redrive may have committed before its connection failed, and is
	// not sent again; a dry run only reads, and runs again on another
	// connection when its session ended.
	sql, args, run := s.inbox.redrive, []any{texts(f.States), ids, f.EventType, filterBound(f.Since), filterBound(f.Until), string(f.Kind),
		f.ObjectID, f.Account, now}, s.autocommit
	if f.DryRun {
		sql, args, run = s.inbox.redriveCount, args[:8], s.autocommitIdempotent
	}
	var n [2]int64
	err = run(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, sql, args...).Scan(&n[0], &n[1])
	})
	if err != nil {
		return 0, 0, s.inboxError("redrive", err)
	}
	return int(n[0]), int(n[1]), nil
}

// inboxGroup is the rows of one kind in one state.
type inboxGroup struct {
	kind  InboxKind
	state InboxState
}

// finishedGroups are the groups of the final states a kind can be in.
func finishedGroups() []inboxGroup {
	var gs []inboxGroup
	for _, k := range []InboxKind{KindEvent, KindTask} {
		for _, st := range inboxStates {
			if st.Final() && k.CanBe(st) {
				gs = append(gs, inboxGroup{k, st})
			}
		}
	}
	return gs
}

// estimable tells whether Stats may estimate the count of a kind's rows
// in state: a final state a worker never leaves, dead letters apart (an
// alert watches them grow). The states still to apply are counted row by
// row, however many rows a backlog holds.
func estimable(state InboxState) bool {
	return state.Final() && state != InboxDeadLetter
}

// statsSQL is Stats' statement on the inbox table t, whose cost follows
// the rows still to apply, the dead letters and the rows finished lately,
// never the rows the retention window keeps:
//   - the rows still to apply, grouped by kind and state on the state
//     index, with the oldest received and the newest attempted;
//   - per finished group, its rows counted on the finished index (from the
//     index alone), up to $1 when the state is not dead_letter (a count
//     that reaches it is then estimated);
//   - per finished group, the newest attempt: a row finishes after its
//     attempt started, so every row whose attempt started after the bound
//     (the newest attempt among the rows still to apply and among the 20
//     rows of each group that finished last) finished after it too, and
//     the rows finished since the bound hold the newest attempt. The
//     bound itself is one of them too: a row whose attempt ended on a
//     clock set back (NTP stepped it) finished before it started, and is
//     not among the rows finished since its start, but it is among the
//     last finished.
func statsSQL(t string) string {
	var groups []string
	for _, g := range finishedGroups() {
		limit := "$1"
		if !estimable(g.state) {
			limit = "NULL" // every dead letter counted: an alert watches them grow
		}
		groups = append(groups, `('`+string(g.kind)+`', '`+string(g.state)+`', `+limit+`::bigint)`)
	}
	return `WITH open AS (
    SELECT kind, state, count(*) AS n, min(received_at) AS oldest, max(attempted_at) AS attempted
    FROM ` + t + ` WHERE state IN ('pending', 'failed', 'processing') GROUP BY kind, state
), g(kind, state, counted) AS (VALUES ` + strings.Join(groups, ", ") + `),
bound AS (
    SELECT greatest((SELECT max(attempted) FROM open), max(r.attempted_at)) AS at
    FROM g, LATERAL (SELECT attempted_at FROM ` + t + ` AS r
        WHERE r.kind = g.kind AND r.state = g.state AND r.finished_at IS NOT NULL
        ORDER BY r.finished_at DESC LIMIT 20) AS r
)
SELECT kind, state, n, oldest, attempted FROM open
UNION ALL
SELECT g.kind, g.state,
    (SELECT count(*) FROM (SELECT FROM ` + t + ` AS c
        WHERE c.kind = g.kind AND c.state = g.state AND c.finished_at IS NOT NULL LIMIT g.counted) AS c),
    NULL,
    greatest((SELECT at FROM bound), (SELECT max(a.attempted_at) FROM ` + t + ` AS a
        WHERE a.kind = g.kind AND a.state = g.state AND a.finished_at >= (SELECT at FROM bound)))
FROM g`
}

// statsSettings are the planner settings of Stats' transaction. The
// planner does not know the count's limit (a parameter), and on a table
// of some thousands of rows it counted a group by a sequential scan,
// reading every other group's rows too; a bitmap scan would read the
// whole group before the limit applies. Without either, the one way left
// is the finished index, in order, stopped at the limit. And it prices
// the subqueries by whole groups: past jit_above_cost, compiling the
// plan would cost more than running it (300-500 ms against 30 with 1.5
// million rows).
const statsSettings = `SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true),
    set_config('enable_bitmapscan', 'off', true)`

// inStatsTx runs fn in Stats' transaction on db: statsTx, with
// statsSettings.
func inStatsTx(ctx context.Context, db PgxBeginner, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db, statsTx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, statsSettings); err != nil {
			return err
		}
		return fn(tx)
	})
}

// statsTx is Stats' transaction: it only reads.
var statsTx = pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadOnly}

// inboxStats implements inboxBackend: statsSQL, then, for each finished
// group whose count passed statsExactLimit, the planner's estimate of it
// (of its rows, from the statistics ANALYZE keeps: migration 013 keeps
// kind and state together), or, when that estimate is below what was
// counted (no statistics of the group), its count of every row.
func (s *PgxStore) inboxStats(ctx context.Context) (InboxStats, error) {
	var st InboxStats
	err := retryStale(ctx, func() error {
		st = newInboxStats() // anew on each call: it may run again
		return inStatsTx(ctx, s.db, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, s.inbox.stats, s.statsExactLimit+1)
			if err != nil {
				return err
			}
			var kind InboxKind
			var state InboxState
			var n int
			var oldest, attempted pgtype.Timestamptz
			var over []inboxGroup
			_, err = pgx.ForEachRow(rows, []any{&kind, &state, &n, &oldest, &attempted}, func() error {
				if n > s.statsExactLimit && estimable(state) {
					over = append(over, inboxGroup{kind, state})
					n = 0 // added below, estimated
				}
				st.add(kind, state, n, oldest.Time, attempted.Time)
				return nil
			})
			if err != nil {
				return err
			}
			for _, g := range over {
				var plan []struct {
					Plan struct {
						Rows float64 `json:"Plan Rows"`
					}
				}
				if err := tx.QueryRow(ctx, s.inbox.estimate[g]).Scan(&plan); err != nil {
					return err
				}
				if len(plan) != 1 {
					return errorf("the estimate of %s %s rows: EXPLAIN answered %d plans", g.kind, g.state, len(plan))
				}
				if n := int(plan[0].Plan.Rows); n > s.statsExactLimit {
					st.addEstimate(g.kind, g.state, n)
					continue
				}
				// Fewer than counted: PostgreSQL has no statistics of the
				// group (a table never analyzed: restored, upgraded,
				// autovacuum off or not come yet), and guesses a row or
				// two. Counted row by row, until an ANALYZE.
				var n int
				if err := tx.QueryRow(ctx, s.inbox.statsCount, string(g.kind), string(g.state)).Scan(&n); err != nil {
					return err
				}
				st.add(g.kind, g.state, n, time.Time{}, time.Time{})
			}
			return nil
		})
	})
	if err != nil {
		return InboxStats{}, s.inboxError("stats", err)
	}
	return st, nil
}

// inboxList implements inboxBackend: one query, newest received first;
// with an ObjectID, on the object's index (migration 012), the object's
// rows alone.
func (s *PgxStore) inboxList(ctx context.Context, f InboxFilter) ([]InboxRecord, error) {
	var out []InboxRecord
	err := s.autocommitIdempotent(ctx, func(q pgxQuerier) error {
		rows, err := q.Query(ctx, s.inbox.list, inboxListArgs(f)...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanInboxRecord)
		return err
	})
	if err != nil {
		return nil, s.inboxError("list", err)
	}
	return out, nil
}

// inboxListArgs are the arguments of the statement list for f.
func inboxListArgs(f InboxFilter) []any {
	return []any{texts(f.States), f.EventType, f.ObjectID, filterBound(f.Since), filterBound(f.Until), f.Limit, f.EventIDs,
		string(f.Kind), f.Account, f.After.EventID, optionalTime(f.After.ReceivedAt)}
}

// inboxHeldBy implements inboxBackend: one query over the object index.
func (s *PgxStore) inboxHeldBy(ctx context.Context, eventID string, now time.Time, limit int) ([]InboxHolder, error) {
	var out []InboxHolder
	err := s.autocommitIdempotent(ctx, func(q pgxQuerier) error {
		rows, err := q.Query(ctx, s.inbox.heldBy, eventID, now, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (InboxHolder, error) {
			var h InboxHolder
			var times inboxTimes
			if err := row.Scan(append(h.columns(&times), &h.Earlier)...); err != nil {
				return h, err
			}
			times.set(&h.InboxRecord)
			return h, nil
		})
		return err
	})
	if err != nil {
		return nil, s.inboxError("held by", err)
	}
	return out, nil
}

// inboxTimes are the nullable times of a row, scanned before they become
// an InboxRecord's zero times.
type inboxTimes struct {
	attemptedAt, nextAttemptAt, finishedAt, leaseUntil, redrivenAt pgtype.Timestamptz
}

func (t *inboxTimes) set(r *InboxRecord) {
	r.AttemptedAt, r.NextAttemptAt, r.FinishedAt = t.attemptedAt.Time, t.nextAttemptAt.Time, t.finishedAt.Time
	// Zero when never redriven.
	r.RedrivenAt = t.redrivenAt.Time
	if r.State == InboxProcessing { // a lease held; every statement that ends one clears it too
		r.LeaseUntil = t.leaseUntil.Time
	}
}

// columns are the scan destinations of inboxColumns.
func (r *InboxRecord) columns(t *inboxTimes) []any {
	return []any{&r.Kind, &r.EventID, &r.EventType, &r.ObjectID, &r.Account, &r.Livemode, &r.APIVersion, &r.Created,
		&r.State, &r.Attempt, &r.LastError, &r.ReceivedAt, &t.attemptedAt, &t.nextAttemptAt, &t.finishedAt, &t.leaseUntil,
		&r.Redrives, &t.redrivenAt}
}

// scanInboxRecord scans inboxColumns: a record.
func scanInboxRecord(row pgx.CollectableRow) (InboxRecord, error) {
	return scanInboxRecordWith(row)
}

// scanInboxRecordWith scans inboxColumns, a record, then the columns
// after them into more.
func scanInboxRecordWith(row pgx.CollectableRow, more ...any) (InboxRecord, error) {
	var r InboxRecord
	var times inboxTimes
	if err := row.Scan(append(r.columns(&times), more...)...); err != nil {
		return r, err
	}
	times.set(&r)
	return r, nil
}

// scanInboxRow scans inboxColumns, payload, seq, trace, due_at,
// prev_attempted_at, prev_state and expired: a leased row.
func scanInboxRow(row pgx.CollectableRow) (inboxRow, error) {
	var r inboxRow
	var times inboxTimes
	var prev pgtype.Timestamptz
	if err := row.Scan(append(r.columns(&times), &r.Payload, &r.Seq, &r.Trace, &r.DueAt, &prev, &r.PrevState, &r.LeaseExpired)...); err != nil {
		return r, err
	}
	times.set(&r.InboxRecord)
	r.PrevAttemptedAt = prev.Time
	return r, nil
}

// inboxStoreTime implements inboxClock: the database's clock_timestamp(),
// a statement and a transaction of its own.
func (s *PgxStore) inboxStoreTime(ctx context.Context) (now time.Time, err error) {
	defer s.recoverConnsPanic("clock", &err)
	err = s.autocommit(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	})
	if err != nil {
		return time.Time{}, s.inboxError("clock", err)
	}
	return now, nil
}

// errNotifyNeedsPool: inboxListen needs a connection of its own, which only
// a *pgxpool.Pool gives; the Inbox's workers then find other processes'
// events by polling.
var errNotifyNeedsPool = errors.New("idempotency: inbox notifications need a *pgxpool.Pool (LISTEN holds a connection of its own); workers poll instead")

// inboxNotify implements inboxNotifier: SELECT pg_notify, a statement and a
// transaction of its own.
func (s *PgxStore) inboxNotify(ctx context.Context) (err error) {
	defer s.recoverConnsPanic("notify", &err)
	err = s.autocommit(ctx, func(q pgxQuerier) error {
		_, err := q.Exec(ctx, `SELECT pg_notify($1, '')`, s.inbox.channel)
		return err
	})
	if err != nil {
		return s.inboxError("notify", err)
	}
	return nil
}

// errNotifyPoolOfOne: inboxListen would hold the only connection of the
// pool for as long as Run runs, and every insert, lease and attempt would
// wait for it until it timed out; the workers poll instead.
var errNotifyPoolOfOne = errors.New("idempotency: inbox notifications need a pool of at least 2 connections (LISTEN holds one for as long as Run runs, and the pool's MaxConns is 1); workers poll instead")

// pgxAcquirer lends a connection of its own: a *pgxpool.Pool.
type pgxAcquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// notifyTaskWorkers wakes the workers of other processes after a commit
// that stored a task in a process that builds no Inbox on the task's
// Handlers (a synchronous receiver whose tasks a worker deployment runs),
// as Inbox.notifyOthers does for an inbox: outside the transaction, in the
// background, at most one notification in flight, the tasks committed
// meanwhile sharing the next. A lost notification costs the workers' next
// poll (PollInterval). Only a store on a pool notifies: a *pgx.Conn
// carries one statement at a time, and the next delivery would find it
// busy with the notification.
func (s *PgxStore) notifyTaskWorkers() {
	if _, ok := s.db.(pgxAcquirer); !ok {
		return
	}
	s.taskNotify.do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		defer cancel()
		_ = s.inboxNotify(ctx) // the workers poll too
	})
}

// inboxListen implements inboxNotifier. It holds one connection of the
// pool while it listens, and closes it when it returns rather than give the
// pool back a connection that listens. It returns as soon as ctx is done,
// whatever the pool's connections do with a cancelled context. With a db
// other than a *pgxpool.Pool it fails at once with errNotifyNeedsPool, and
// with a pool of one connection with errNotifyPoolOfOne.
func (s *PgxStore) inboxListen(ctx context.Context, listening, wake func()) (err error) {
	defer s.recoverConnsPanic("listen", &err)
	pool, ok := s.db.(pgxAcquirer)
	if !ok {
		return errorf("%w (the store's db is a %T)", errNotifyNeedsPool, s.db)
	}
	if p, ok := s.db.(pgxPoolStater); ok && p.Stat().MaxConns() < 2 {
		return errNotifyPoolOfOne
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return s.inboxError("listen", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = pc.Hijack().Close(ctx)
	}()
	conn := pc.Conn()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.inbox.channel}.Sanitize()); err != nil {
		return s.inboxError("listen", err)
	}
	listening()
	// The wait for a notification runs no query: a cancel request does
	// not end it, and on a pool whose connections cancel so
	// (pgconn.CancelRequestContextWatcherHandler) or set their deadline
	// late (a DeadlineDelay) it would hold Run's stop until that
	// deadline. It is ended here instead, when ctx is done, by a deadline
	// now, whatever the pool's handler.
	netConn := conn.PgConn().Conn()
	ended := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = netConn.SetDeadline(time.Now())
		close(ended)
	})
	defer func() {
		if !stop() {
			<-ended
			_ = netConn.SetDeadline(time.Time{}) // for the Terminate of the deferred close
		}
	}()
	wait := context.WithoutCancel(ctx)
	for {
		if _, err := conn.WaitForNotification(wait); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err() // the deadline's timeout is the stop's
			}
			return s.inboxError("listen", err)
		}
		wake()
	}
}

// maxConns is the MaxConns of the pool the store is on, for Run's check of
// its workers' connections.
func (s *PgxStore) maxConns() (int32, bool) {
	p, ok := s.db.(*pgxpool.Pool)
	if !ok {
		return 0, false
	}
	return p.Config().MaxConns, true
}
