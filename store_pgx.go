package idempotency

import (
	"context"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// PgxBeginner begins a pgx transaction: a *pgxpool.Pool or a *pgx.Conn. An
// http.Handler serves requests concurrently, and a *pgx.Conn must never
// carry two deliveries at once (their statements would mix in one
// transaction, or fail with "conn busy"): give the webhook handler a pool,
// and keep a *pgx.Conn for tools and tests that deliver one event at a time.
// When db can also send a batch (both can), the store begins the
// transaction, claims the event and sets its savepoint in one round trip;
// otherwise in two.
type PgxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// PgxConfig configures a [PgxStore]. The zero value is valid.
type PgxConfig struct {
	// Schema holds the store's tables (idempotency_events,
	// idempotency_guards, idempotency_inbox, idempotency_objects,
	// idempotency_order, idempotency_recovery, idempotency_migrations) and
	// the sequence idempotency_seq. It is quoted as an identifier, never
	// interpolated raw. Migrate creates it if needed. Valid UTF-8 without
	// NUL bytes or other control characters (a newline), without leading
	// or trailing white space (quoted, "billing " is another schema than
	// "billing"), at most 63 bytes (PostgreSQL cuts longer names short).
	// Defaults to "public".
	Schema string

	// IsoLevel is the isolation level of every event transaction, and so of
	// the handler's own SQL, set on each (BEGIN ISOLATION LEVEL) whatever
	// the role's or database's default_transaction_isolation. Defaults to
	// pgx.ReadCommitted; a level other than pgx.ReadCommitted,
	// pgx.RepeatableRead and pgx.Serializable is refused.
	//
	// At READ COMMITTED a delivery that finds the event id (or a guard key)
	// claimed by a transaction in flight waits for it, then sees its outcome.
	// At REPEATABLE READ and SERIALIZABLE PostgreSQL answers that wait with a
	// serialization failure instead, as it does for conflicting business
	// writes; the store runs the whole transaction again, up to 5 attempts in
	// all, and the new attempt sees the committed claim. A transaction that
	// still fails is answered 500, and Stripe retries it. Deadlocks are
	// retried the same way at every level.
	IsoLevel pgx.TxIsoLevel

	// RecentClaims is how many committed event ids the store remembers in
	// this process. A redelivery of one is answered duplicate without a
	// database round trip, and concurrent copies of one event wait in the
	// process for the first copy's outcome rather than each on the claim
	// row. The database stays the authority for every id not remembered, so
	// replicas agree with each other as they do with the memories off. It
	// also sizes the memory of event ids this process stored in the inbox,
	// which answers an inbox redelivery duplicate without a round trip in
	// the same way. Defaults to 16384; negative turns both memories off,
	// and with them the in-process wait.
	RecentClaims int

	// RecentClaimsTTL is how long an id stays in those memories. It bounds
	// how long a forgotten event ([PgxStore.Forget], or a ledger row deleted
	// by hand) is still answered duplicate by another replica: the
	// PgxStore that forgets it drops it at once, every other (another
	// replica's, or another PgxStore of the same process) within
	// RecentClaimsTTL.
	// Stripe's copies of one event come within seconds of each other, so a
	// short time keeps nearly all of the memories' gain. Defaults to
	// DefaultRecentClaimsTTL (1 minute); negative is refused.
	RecentClaimsTTL time.Duration
}

// PgxStore is the PostgreSQL [Store], on pgx v5. The event id is claimed
// with INSERT ... ON CONFLICT DO NOTHING in the transaction that runs the
// handler, so PostgreSQL itself makes a concurrent duplicate wait for the
// first transaction and answers it duplicate (committed) or lets it run
// (rolled back). Run [PgxStore.Migrate] once at start-up.
//
// It is safe for concurrent use by as many goroutines and processes as the
// database serves. Make one with [NewPgxStore]: the zero PgxStore has no
// database, its methods fail naming NewPgxStore, and [NewHandler] and
// [NewInbox] refuse it.
type PgxStore struct {
	db        PgxBeginner
	batch     pgxBatcher // db, when it sends batches (a pool or a connection)
	cfg       PgxConfig
	opts      pgx.TxOptions
	sql       pgxStatements
	inbox     pgxInboxSQL
	objects   pgxObjectSQL
	recovery  pgxRecoverySQL
	retention pgxRetentionSQL
	local     *localClaims // nil when PgxConfig.RecentClaims is negative
	// stored are the ids of events this process stored in the inbox; nil
	// when PgxConfig.RecentClaims is negative.
	stored *storedIDs
	ingest ingest
	// taskNotify sends the notifications of the tasks committed by a
	// process that builds no Inbox (see notifyTaskWorkers).
	taskNotify coalescer
	// lostCommitWait bounds the look-ups of lostCommitState:
	// rollbackTimeout, but in tests.
	lostCommitWait time.Duration
	// statsExactLimit: Stats counts the rows of a kind in a final state
	// (dead letters apart) up to it, then estimates them.
	statsExactLimit int
	// conflictWait waits before a conflict's retry (retryConflicts):
	// waitConflict, but in tests.
	conflictWait func(ctx context.Context, attempt int) bool
}

// The defaults of PgxConfig.RecentClaims and RecentClaimsTTL.
const (
	DefaultRecentClaims    = 16384
	DefaultRecentClaimsTTL = time.Minute
)

type pgxStatements struct {
	claim, markSkipped, guard, releaseGuard, lookupEvent, lookupGuard, listEvents string
	// claimXact is claim answering the id of the transaction that
	// claimed, and claimCommitted tells whether that transaction is
	// still in progress or committed its claim (see claimCommitState).
	claimXact, claimCommitted string
}

// maxIdentifierLen is the longest name PostgreSQL keeps whole, in bytes
// (NAMEDATALEN - 1).
const maxIdentifierLen = 63

// NewPgxStore returns a PostgreSQL store on db. It fails when db is nil
// (also a nil *pgxpool.Pool, as a pgxpool.New that failed returns) or cfg
// is invalid.
func NewPgxStore(db PgxBeginner, cfg PgxConfig) (*PgxStore, error) {
	if isNil(db) {
		return nil, errorf("NewPgxStore: nil db")
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if err := checkText("PgxConfig.Schema", cfg.Schema, true); err != nil {
		return nil, err
	}
	if paddedName(cfg.Schema) {
		// Quoted, " billing" or "billing\n" (an env file's newline) is
		// another schema than "billing": a ledger of its own, where every
		// event its peers applied is new.
		return nil, errorf("PgxConfig.Schema %q has leading or trailing white space or a control character: quoted, it would name another schema than the one meant, with a ledger of its own", cfg.Schema)
	}
	if len(cfg.Schema) > maxIdentifierLen {
		return nil, errorf("PgxConfig.Schema is %d bytes long: PostgreSQL keeps the first %d bytes of a name, so two longer schemas could share one's tables", len(cfg.Schema), maxIdentifierLen)
	}
	switch cfg.IsoLevel {
	case "":
		cfg.IsoLevel = pgx.ReadCommitted
	case pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable:
	default:
		return nil, errorf("PgxConfig.IsoLevel %q is not one of read committed, repeatable read, serializable", cfg.IsoLevel)
	}
	if err := defaultDuration(&cfg.RecentClaimsTTL, DefaultRecentClaimsTTL, "PgxConfig.RecentClaimsTTL"); err != nil {
		return nil, err
	}
	var local *localClaims
	var stored *storedIDs
	switch {
	case cfg.RecentClaims == 0:
		cfg.RecentClaims = DefaultRecentClaims
		fallthrough
	case cfg.RecentClaims > 0:
		local = newLocalClaims(cfg.RecentClaims, cfg.RecentClaimsTTL)
		stored = &storedIDs{ids: newRecentIDs(cfg.RecentClaims, cfg.RecentClaimsTTL)}
	}
	batch, _ := db.(pgxBatcher)
	s := pgx.Identifier{cfg.Schema}.Sanitize()
	claimSQL := `INSERT INTO ` + s + `.idempotency_events (event_id, event_type, object_id, outcome, livemode, account, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (event_id) DO NOTHING`
	return &PgxStore{
		db:              db,
		batch:           batch,
		cfg:             cfg,
		opts:            pgx.TxOptions{IsoLevel: cfg.IsoLevel},
		local:           local,
		stored:          stored,
		inbox:           newPgxInboxSQL(cfg.Schema),
		objects:         newPgxObjectSQL(cfg.Schema),
		recovery:        newPgxRecoverySQL(cfg.Schema),
		retention:       newPgxRetentionSQL(cfg.Schema),
		lostCommitWait:  rollbackTimeout,
		statsExactLimit: statsExactLimit,
		conflictWait:    waitConflict,
		sql: pgxStatements{
			claim:          claimSQL,
			claimXact:      claimSQL + ` RETURNING txid_current()`,
			claimCommitted: xactStateSQL("$2", `txid_status($2) = 'committed' AND EXISTS (SELECT 1 FROM `+s+`.idempotency_events WHERE event_id = $1)`),
			markSkipped:    `UPDATE ` + s + `.idempotency_events SET outcome = 'skipped', skip_reason = $2 WHERE event_id = $1`,
			guard:          `INSERT INTO ` + s + `.idempotency_guards (scope, key, event_id) VALUES ($1, $2, $3) ON CONFLICT (scope, key) DO NOTHING`,
			releaseGuard:   `DELETE FROM ` + s + `.idempotency_guards WHERE scope = $1 AND key = $2 AND event_id = $3`,
			lookupEvent:    `SELECT ` + eventColumns + ` FROM ` + s + `.idempotency_events WHERE event_id = $1`,
			lookupGuard:    `SELECT scope, key, event_id, claimed_at FROM ` + s + `.idempotency_guards WHERE scope = $1 AND key = $2`,
			listEvents: `SELECT ` + eventColumns + ` FROM ` + s + `.idempotency_events
WHERE (cardinality($1::text[]) = 0 OR outcome = ANY ($1))
  AND ($2 = '' OR event_type = $2) AND ($3 = '' OR object_id = $3)
  AND ($4::timestamptz IS NULL OR processed_at >= $4) AND ($5::timestamptz IS NULL OR processed_at < $5)
  AND ($7 = '' OR account = $7)
  AND ($8 = '' OR processed_at < $9 OR (processed_at = $9 AND event_id COLLATE "C" < $8))
ORDER BY processed_at DESC, event_id COLLATE "C" DESC
LIMIT $6`,
		},
	}, nil
}

// PgxTx returns the pgx transaction behind tx, for the handler's own SQL:
// what it writes there commits or rolls back with the event's claim.
// Writes through database/sql do not: a *sql.DB, and a *sql.Tx of it,
// run on connections of their own, also when opened on the store's pool
// (stdlib.OpenDBFromPool), and commit apart from the claim; a
// database/sql repository's ExecContext runs in this transaction through
// an adapter of a few lines (the README's "With database/sql"), its
// reads do not: no adapter makes the *sql.Row and *sql.Rows of
// QueryRowContext and QueryContext. So sqlc's Queries generated for pgx
// (sql_package "pgx/v5") take this pgx.Tx in WithTx, and those generated
// for database/sql cannot: generate the handlers' queries for pgx (the
// README's "With sqlc"). The
// pgx.Tx's Commit and Rollback fail with [ErrTxOwnedByStore]: the store
// ends the transaction when the handler returns (Begin, a savepoint, is
// fine; a key claimed early for an action declared KeyIsObjectID that
// the handler has not asked for yet is released first, so that Guard
// claims it inside the savepoint; so it is before a SAVEPOINT statement
// sent through Exec, one whose first word is SAVEPOINT, not after a
// comment, nor through Query or a batch).
// The rows of its queries and the results of its batches hold the
// connection until closed, as pgx's do: a statement sent meanwhile fails
// with [ErrTxBusy], and a handler that returns with them open fails its
// attempt with ErrTxBusy, rolled back. A statement that fails aborts the
// transaction, the claim with it: a handler that goes on and returns nil
// fails its attempt, nothing kept, with an error that says so; return the
// statement's error (or a [Skip]), or run the statement in a savepoint
// (Begin, or pgx.BeginFunc) and roll back to it. Conn and LargeObjects are
// pgx's own, outside these rules (pgx.LargeObjects cannot be wrapped): use
// them only while the handler runs, from its goroutine. It panics when tx does
// not come from a [PgxStore], a programming error.
func PgxTx(tx Tx) pgx.Tx {
	ptx, ok := tx.(*pgxTx)
	if !ok {
		// Most often a handler written for PostgreSQL, run by a test on a
		// MemoryStore.
		panic(fmt.Sprintf("idempotency: PgxTx: %T is not a PgxStore transaction: test a handler that writes through PgxTx "+
			"on PostgreSQL (idempotencytest.Postgres), or give it, on a MemoryStore, a fake of its writes applied in tx.AfterCommit", tx))
	}
	return handlerTx{Tx: ptx.tx, st: &ptx.txState, p: ptx}
}

// made fails when s is not a PgxStore NewPgxStore returned (a zero or nil
// one, which has no database), naming method, as Inbox.made does: the
// methods return it before they touch anything.
func (s *PgxStore) made(method string) error {
	if s == nil || s.db == nil {
		return errorf("%s: a PgxStore not made by NewPgxStore", method)
	}
	return nil
}

// checkStore refuses, for fn (NewHandler, NewInbox), a nil store, or a
// PgxStore NewPgxStore did not return: every delivery or lease on it
// would fail.
func checkStore(fn string, store Store) error {
	if store == nil {
		return errorf("%s: nil Store", fn)
	}
	if isNil(store) {
		return errorf("%s: nil Store (a nil %T)", fn, store)
	}
	if s, ok := store.(*PgxStore); ok {
		return s.made(fn)
	}
	return nil
}

// handlerTx is the handler's view of the event transaction. Once the store
// ends it, its statements fail with [ErrTxDone]: on an inbox worker the
// same connection may already carry the next event's transaction
// (txChain), which SQL kept from this handler must never join.
type handlerTx struct {
	pgx.Tx
	st *txState
	p  *pgxTx
}

func (handlerTx) Commit(context.Context) error   { return ErrTxOwnedByStore }
func (handlerTx) Rollback(context.Context) error { return ErrTxOwnedByStore }

func (t handlerTx) Begin(ctx context.Context) (pgx.Tx, error) {
	// Its statements are counted as they go out: on a chained session
	// that had ended, the first one fails the attempt's first statement.
	if err := t.st.enterCounting(0); err != nil {
		return nil, err
	}
	defer t.st.leave()
	// A key claimed early, before any savepoint of the handler's, would
	// outlive a rollback of this one if Guard answered from that claim
	// within it: released now, it is claimed where Guard asks for it.
	if err := t.p.releaseUnasked(ctx); err != nil {
		return nil, err
	}
	t.st.count(1) // the savepoint
	nested, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	t.st.count(1) // the pseudo-nested transaction's RELEASE or ROLLBACK TO: at least one more
	// Its statements go out on the same connection, in the same
	// transaction: they are the handler's, refused alike once the store
	// ends it (a chained commit may have begun the next event's on it).
	return nestedTx{handlerTx{Tx: nested, st: t.st, p: t.p}}, nil
}

// nestedTx is a pseudo-nested transaction (a savepoint) of the handler's,
// which it may commit or roll back itself.
type nestedTx struct{ handlerTx }

func (t nestedTx) Commit(ctx context.Context) error {
	if err := t.st.enter(); err != nil {
		return err
	}
	defer t.st.leave()
	return t.Tx.Commit(ctx)
}

func (t nestedTx) Rollback(ctx context.Context) error {
	if err := t.st.enter(); err != nil {
		return err
	}
	defer t.st.leave()
	return t.Tx.Rollback(ctx)
}

func (t handlerTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.st.enter(); err != nil {
		return nil, err
	}
	defer t.st.leave()
	return t.Tx.Prepare(ctx, name, sql)
}

func (t handlerTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if len(t.p.early) > 0 && isSavepoint(sql) {
		return t.savepoint(ctx, sql, args...)
	}
	if err := t.st.enter(); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer t.st.leave()
	return t.Tx.Exec(ctx, sql, args...)
}

// savepoint runs sql, a savepoint of the handler's own SQL (a repository
// on database/sql's ExecContext has no Begin to call), as Begin opens
// one: the early claims not asked for released first, so that a rollback
// to it undoes what Guard claims in it, and each statement counted as it
// goes out.
func (t handlerTx) savepoint(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.st.enterCounting(0); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer t.st.leave()
	if err := t.p.releaseUnasked(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	t.st.count(1)
	return t.Tx.Exec(ctx, sql, args...)
}

// isSavepoint reports whether sql is a SAVEPOINT command, by its first
// word.
func isSavepoint(sql string) bool {
	const word = "savepoint"
	s := strings.TrimLeft(sql, " \t\r\n")
	return len(s) > len(word) && strings.EqualFold(s[:len(word)], word) && strings.ContainsRune(" \t\r\n", rune(s[len(word)]))
}

func (t handlerTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.st.enter(); err != nil {
		return errRows{err}, err
	}
	defer t.st.leave()
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		return rows, err // closed already: it holds nothing
	}
	return t.st.rows(rows, nil), nil
}

func (t handlerTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := t.Query(ctx, sql, args...)
	return handlerRow{rows}
}

func (t handlerTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.st.enter(); err != nil {
		return errBatchResults{err}
	}
	defer t.st.leave()
	br := &handlerBatch{br: t.Tx.SendBatch(ctx, b), tx: t}
	t.st.opened(br)
	return br
}

func (t handlerTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.st.enter(); err != nil {
		return 0, err
	}
	defer t.st.leave()
	return t.Tx.CopyFrom(ctx, table, columns, src)
}

// Run implements [Store].
func (s *PgxStore) Run(ctx context.Context, c Claim, apply ApplyFunc) (Outcome, error) {
	if err := s.made("PgxStore.Run"); err != nil {
		return OutcomeFailed, err
	}
	if err := c.check(); err != nil {
		return OutcomeFailed, err
	}
	// An inbox attempt asks the database: it leased the event's only
	// copy, so there is no concurrent copy to wait for, and an id this
	// process remembers may have been forgotten since (Forget) by another
	// process; answering it from memory would mark the stored event
	// processed without applying it.
	if s.local != nil && c.fence == nil {
		done, release, err := s.local.acquire(ctx, c.EventID)
		if err != nil {
			return OutcomeFailed, err
		}
		if done {
			return OutcomeDuplicate, nil
		}
		var once sync.Once
		settle := func(committed bool) { once.Do(func() { release(committed) }) }
		var outcome Outcome
		defer func() { settle(outcome != OutcomeFailed && outcome != OutcomeUnavailable && outcome != "") }()
		// Settle as soon as the commit succeeds: AfterCommit funcs must not
		// hold copies of a committed event in the process.
		outcome, err = s.run(ctx, c, apply, func() { settle(true) })
		return outcome, err
	}
	if c.fence != nil {
		return s.runAttempt(ctx, c, apply)
	}
	return s.run(ctx, c, apply, func() {})
}

// runAttempt runs an inbox attempt's transaction, on the worker's
// goroutine: the library's, which a panic would end with its process.
// Its apply (the dispatcher's) turns the handler's panics into errors
// already; a panic in the code of the store's connections (a pgx tracer,
// as the claim, a statement of the store's or the COMMIT goes out) fails
// the attempt with a PanicError that names them (recoverConnsPanic). The
// transaction is rolled back on the way; a COMMIT that went through
// before the panic is found so as the failure is recorded, as one whose
// answer was lost (Inbox.leaseLostEnd).
func (s *PgxStore) runAttempt(ctx context.Context, c Claim, apply ApplyFunc) (outcome Outcome, err error) {
	defer func() {
		if _, ok := err.(*PanicError); ok {
			outcome = OutcomeFailed
		}
	}()
	defer s.recoverConnsPanic("", &err)
	return s.run(ctx, c, apply, func() {})
}

// run runs the transaction, again while the database fails it for a
// deadlock or a serialization conflict (retryConflicts), or a chained
// commit began it on a session that had ended (chainedSessionLost).
func (s *PgxStore) run(ctx context.Context, c Claim, apply ApplyFunc, committed func()) (Outcome, error) {
	var outcome Outcome
	err := s.retryConflicts(ctx, func() (err error) {
		outcome, err = s.runOnce(ctx, c, apply, committed)
		return err
	})
	return s.translate(outcome, err)
}

// chainedSessionLost is the failure of an attempt whose transaction a
// chained commit began (txChain) on a session that had ended before the
// attempt used it: its first statement (the handler's, or the store's
// after it, or its COMMIT when nothing went before it) failed with the
// session, and nothing was kept. Begun on its own, the transaction would
// have gone out on another connection (retryStale); run runs it again, as
// after a deadlock, claiming the event afresh (a COMMIT that went through
// as its session ended is found so: the event is a duplicate, never
// applied twice). A session that ends after the attempt's first statement
// went through fails the attempt, as it does unchained.
type chainedSessionLost struct{ err error }

func (e *chainedSessionLost) Error() string { return e.err.Error() }
func (e *chainedSessionLost) Unwrap() error { return e.err }

// sessionEnded reports that err, the failure of a statement in tx, is the
// end of tx's session: the server closed it (a terminated backend, a
// restart, idle_in_transaction_session_timeout) and pgx knows it closed.
func sessionEnded(tx pgx.Tx, err error) bool {
	c := tx.Conn()
	return c != nil && c.IsClosed() && staleConn(err)
}

func (s *PgxStore) runOnce(ctx context.Context, c Claim, apply ApplyFunc, onCommit func()) (_ Outcome, err error) {
	outcome := OutcomeProcessed
	if apply == nil {
		outcome = c.nilApplyOutcome()
	}
	var tx pgx.Tx
	var early []earlyGuard
	var xact int64 // the transaction's id, when it is a claim of the Handler's
	claimed := true
	chained, commitSent := false, false
	if b := c.chainOf().take(c.EventID); b != nil && apply != nil {
		tx, early = b.tx, b.early // claimed by the commit of the worker's previous event
		chained = true
	} else {
		if b != nil {
			rollback(ctx, b.tx)
		}
		tx, early, xact, claimed, err = s.beginClaim(ctx, c, outcome, apply != nil)
	}
	if err != nil || !claimed {
		if err != nil {
			return OutcomeFailed, err
		}
		return OutcomeDuplicate, nil
	}
	ptx := &pgxTx{txState: txState{claim: c}, tx: tx, s: s, early: early}
	committed := false
	defer func() {
		if !committed {
			first := ptx.statements() == 0 || ptx.statements() == 1 && !commitSent // the failed statement was the attempt's first
			if chained && err != nil && first && sessionEnded(tx, err) {
				err = &chainedSessionLost{err}
			}
			rollback(ctx, tx)
			ptx.end(ctx, false)
		}
	}()

	if apply != nil {
		if err := ptx.runHandler(ctx, apply, ptx); err != nil {
			reason, ok := skipReason(err)
			if !ok {
				// Counted while the transaction holds its connection: a
				// handler that waited for a second one of a full pool (a
				// *sql.DB on it) said only that its context ended.
				return OutcomeFailed, handlerError(tx, s.poolFullHint(err))
			}
			ptx.count(1)
			if err := s.keepSkipped(ctx, tx, &c, reason); err != nil {
				return OutcomeFailed, err
			}
			outcome = OutcomeSkipped
			ptx.end(ctx, false) // the handler's AfterCommit funcs belong to its writes
		} else if aborted(tx) {
			// Its COMMIT would roll back, the claim with it: say why.
			return OutcomeFailed, errorf("the handler returned nil after a statement of its transaction failed, " +
				"which aborted the transaction, the event's claim with it (nothing kept): return the statement's error " +
				"(or a Skip), or run the statement in a savepoint of its own (PgxTx(tx).Begin) and roll back to it")
		} else if err := ptx.releaseUnasked(ctx); err != nil {
			return OutcomeFailed, err
		}
	}
	chain := c.chainOf()
	if ptx.hasAfterCommit() {
		// AfterCommit funcs run once the commit returns: a transaction
		// begun for the next event would hold a pooled connection, and
		// that event's row, while they run, and they may need the pool.
		chain = nil
	}
	commitSent = true
	if err := s.commit(ctx, tx, chain); err != nil {
		// Not confirmed either way, it may have committed, or commit yet:
		// a store's failure, whatever ended the wait (a dropped
		// connection, ctx), never the handler's, whose failures store
		// nothing.
		switch s.claimCommitState(ctx, c.EventID, xact, err) {
		case xactCommitted:
		case xactInProgress:
			return OutcomeUnavailable, errorf("%w: the COMMIT went unanswered (%w), and its transaction was still in progress %v later: "+
				"the event may yet be applied", ErrStoreUnavailable, err, s.lostCommitWait)
		case xactUnknown:
			return OutcomeUnavailable, errorf("%w: the COMMIT went unanswered (%w), and its transaction could not be looked up: "+
				"the event may have been applied", ErrStoreUnavailable, err)
		default:
			return OutcomeFailed, errorf("commit: %w", err)
		}
	}
	committed = true
	onCommit()
	if outcome != OutcomeSkipped {
		ptx.end(ctx, true)
	}
	return outcome, nil
}

// beginClaim begins the event's transaction and claims the event id in it,
// followed, when a handler will run, by a savepoint (a skip rolls back to it
// and keeps the claim) and the claims of c.Guards, which a skip rolls back
// too. It reports claimed false, with nothing left open, when the id is
// claimed already. With c.fence it also makes the event's inbox row final,
// before the savepoint, so that a skip keeps it; if the row is not
// processing at the fence's attempt it rolls back and fails with
// ErrLeaseLost. On a pool or a connection all of it travels in one round
// trip (pgx's Batch.BeginTx).
func (s *PgxStore) beginClaim(ctx context.Context, c Claim, outcome Outcome, handler bool) (tx pgx.Tx, early []earlyGuard, xact int64, claimed bool, err error) {
	// The batch holds no COMMIT: whatever a stale connection failed to do
	// was not kept.
	err = retryStale(ctx, func() (err error) {
		tx, early, xact, claimed, err = s.beginClaimOnce(ctx, c, outcome, handler)
		return err
	})
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		err = errorf("claiming event: %w", err)
	}
	return tx, early, xact, claimed, err
}

// retryStale calls fn, and again, on another connection, while it fails
// on a stale one: a pool may hand out a connection the server closed while
// it sat idle (after a database restart, a failover, a terminated
// session). Retrying is safe because staleConn accepts only failures of
// the connection, never of the statement or of the database (a failure
// to connect is not retried: the database itself is unreachable), and
// because every fn given here either kept nothing when its connection
// failed (no COMMIT was sent) or may run twice with the effect of once
// (ON CONFLICT DO NOTHING, an UPDATE fenced on the attempt); each call
// says which. It stops after maxBeginAttempts calls, about one per stale
// connection in a pool, or once ctx is done.
func retryStale(ctx context.Context, fn func() error) error {
	for try := 1; ; try++ {
		err := fn()
		if err == nil || try == maxBeginAttempts || !staleConn(err) || ctx.Err() != nil {
			return err
		}
	}
}

// pgxBatcher sends a batch, which may begin a transaction: a
// *pgxpool.Pool or a *pgx.Conn.
type pgxBatcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// beginBatch starts a batch that runs in a new transaction with opts. When
// the db sends batches, BEGIN is the batch's first statement and tx is nil
// until sendBatch returns it; otherwise the transaction is begun here, in
// a round trip of its own, and the batch is sent in it.
func (s *PgxStore) beginBatch(ctx context.Context, opts pgx.TxOptions) (batch *pgx.Batch, tx pgx.Tx, err error) {
	batch = &pgx.Batch{}
	if s.batch != nil {
		batch.BeginTx(opts)
		return batch, nil, nil
	}
	tx, err = s.db.BeginTx(ctx, opts)
	return batch, tx, err
}

// sendBatch sends a batch from beginBatch, and returns its transaction and
// results. With commit, a batch that holds its BEGIN ends with COMMIT too,
// and commitQueued reports it; otherwise the caller commits tx.
func (s *PgxStore) sendBatch(ctx context.Context, batch *pgx.Batch, tx pgx.Tx, commit bool) (_ pgx.Tx, _ pgx.BatchResults, commitQueued bool) {
	if s.batch == nil {
		return tx, tx.SendBatch(ctx, batch), false
	}
	if commit {
		batch.Queue(`COMMIT`)
	}
	var results pgx.BatchResults
	if pool, ok := s.batch.(*pgxpool.Pool); ok {
		results = sendAcquired(ctx, pool, batch)
	} else {
		results = s.batch.SendBatch(ctx, batch)
	}
	return results.Tx(), results, commit
}

// sendAcquired sends batch on a connection it acquires from pool, and
// gives that connection back as pgxpool.Pool.SendBatch does: when its
// results are closed or, when the batch began a transaction, when that
// ends. Unlike the pool's SendBatch it holds the connection while the
// batch starts: should the connection's code panic there (a pgx
// tracer's TraceBatchStart), it gives it back before the panic goes on
// up, where the pool's SendBatch kept it acquired for as long as the
// pool lived, one connection lost per panic.
func sendAcquired(ctx context.Context, pool *pgxpool.Pool, batch *pgx.Batch) pgx.BatchResults {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(batch, err)
	}
	sent := false
	defer func() {
		if !sent {
			c.Release() // a busy or broken connection is destroyed
		}
	}()
	br := c.SendBatch(ctx, batch)
	sent = true
	if tx := br.Tx(); tx != nil {
		return &acquiredResults{BatchResults: br, tx: &acquiredTx{Tx: tx, c: c}}
	}
	return &acquiredResults{BatchResults: br, c: c}
}

// acquiredResults are the results of a batch from sendAcquired: closed,
// they give its connection back, unless tx, the transaction the batch
// began, holds it.
type acquiredResults struct {
	pgx.BatchResults
	c  *pgxpool.Conn
	tx *acquiredTx
}

func (r *acquiredResults) Close() error {
	err := r.BatchResults.Close()
	if r.c != nil {
		r.c.Release()
		r.c = nil
	}
	return err
}

func (r *acquiredResults) Tx() pgx.Tx {
	if r.tx == nil {
		return nil
	}
	return r.tx
}

// acquiredTx is the transaction a batch from sendAcquired began: ended,
// it gives its connection back. A Commit or Rollback that panics does
// not (the pool's Tx does not either): the connection, its transaction
// perhaps open, is closed first (closeAfterPanic), then given back by
// a Rollback again.
type acquiredTx struct {
	pgx.Tx
	c *pgxpool.Conn
}

func (tx *acquiredTx) Commit(ctx context.Context) error {
	err := tx.Tx.Commit(ctx)
	tx.release()
	return err
}

func (tx *acquiredTx) Rollback(ctx context.Context) error {
	err := tx.Tx.Rollback(ctx)
	tx.release()
	return err
}

func (tx *acquiredTx) release() {
	if tx.c != nil {
		tx.c.Release()
		tx.c = nil
	}
}

func (s *PgxStore) beginClaimOnce(ctx context.Context, c Claim, outcome Outcome, handler bool) (pgx.Tx, []earlyGuard, int64, bool, error) {
	batch, tx, err := s.beginBatch(ctx, s.opts)
	if err != nil {
		return nil, nil, 0, false, err
	}
	layout := s.queueClaim(batch, &c, outcome, handler)
	tx, results, _ := s.sendBatch(ctx, batch, tx, false)
	begun := false
	defer func() {
		if !begun {
			// Also returns a pooled connection whose begin failed, or
			// closes one whose code panicked as the answers were read
			// (a pgx tracer): left so, its transaction would hold the
			// claim and the inbox row locked for as long as the process
			// lives.
			rollback(ctx, tx)
		}
	}()
	early, xact, claimed, err := layout.read(results, 0)
	if err == nil && claimed {
		begun = true
		return tx, early, xact, true, nil
	}
	return nil, nil, 0, false, err
}

// claimLayout is where a claim's statements sit in a batch.
type claimLayout struct {
	claimAt, fenceAt, guardsAt, end int
	early                           []earlyGuard
	xact                            bool // the claim answers its transaction's id (claimXact)
}

// queueClaim queues the statements that claim c in a transaction: the
// event id, with c.fence the inbox row's end, and when a handler will run
// the savepoint and the claims of c.Guards. Without c.fence (the
// Handler's claim) the claim answers its transaction's id, which tells
// whether a COMMIT whose answer was lost went through (claimCommitState);
// an inbox attempt's end is found in its row instead (Inbox.leaseLostEnd).
func (s *PgxStore) queueClaim(batch *pgx.Batch, c *Claim, outcome Outcome, handler bool) claimLayout {
	l := claimLayout{claimAt: batch.Len(), fenceAt: -1, xact: c.fence == nil}
	claim := s.sql.claim
	if l.xact {
		claim = s.sql.claimXact
	}
	batch.Queue(claim, c.EventID, c.EventType, c.ObjectID, string(outcome), c.Livemode, c.Account, c.receivedAt())
	if c.fence != nil {
		// The row lock this takes is held until the transaction ends: no
		// lease can take the event meanwhile (they skip locked rows).
		l.fenceAt = batch.Len()
		batch.Queue(s.inbox.finish, c.EventID, c.fence.Attempt, string(inboxState(outcome)), c.fence.Now, c.fence.AttemptedAt, begunArg{c.fence})
	}
	if handler {
		batch.Queue(sqlSavepoint)
		if len(c.Guards) > 0 {
			l.early = make([]earlyGuard, len(c.Guards))
		}
		for i, g := range c.Guards {
			l.early[i].GuardKey = g
			batch.Queue(s.sql.guard, g.Scope, g.Key, c.EventID)
		}
	}
	l.guardsAt = batch.Len() - len(l.early)
	l.end = batch.Len()
	return l
}

// begunArg is the fence's begun as a statement's argument, read as pgx
// encodes it: once the batch has its connection, after any wait for one of
// the pool, not as the batch is built.
type begunArg struct{ f *inboxFence }

// Value implements driver.Valuer, which pgx calls as it sends the batch
// where it does not know the parameter's type.
func (a begunArg) Value() (driver.Value, error) { return a.f.begun(), nil }

// TimestamptzValue implements pgtype.TimestamptzValuer, which pgx prefers
// where it knows the parameter's type: the time is not boxed.
func (a begunArg) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: a.f.begun(), Valid: true}, nil
}

// read reads the results of a batch from its from-th statement on, and
// closes it. claimed is false when the event id was claimed before; the
// error is ErrLeaseLost when the fence found the inbox row taken over.
// xact is the claiming transaction's id, when the claim answers it.
func (l claimLayout) read(results pgx.BatchResults, from int) (early []earlyGuard, xact int64, claimed bool, err error) {
	var fenceTag pgconn.CommandTag
	for i := from; i < l.end && err == nil; i++ {
		if i == l.claimAt && l.xact {
			err = results.QueryRow().Scan(&xact)
			claimed = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			continue
		}
		var tag pgconn.CommandTag
		tag, err = results.Exec()
		switch {
		case i == l.claimAt:
			claimed = tag.RowsAffected() == 1
		case i == l.fenceAt:
			fenceTag = tag
		case i >= l.guardsAt:
			l.early[i-l.guardsAt].first = tag.RowsAffected() == 1
		}
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err != nil || !claimed {
		return nil, 0, false, err
	}
	if l.fenceAt >= 0 && fenceTag.RowsAffected() != 1 {
		return nil, 0, false, ErrLeaseLost
	}
	return l.early, xact, true, nil
}

// claimCommitState is what became of the transaction xact, whose COMMIT
// failed with err, and of its claim of eventID (lostCommitState): the
// COMMIT may have gone through while the connection dropped before its
// answer (a terminated session, a network cut, the context's end as it
// waited). It looks, on another connection, for the claim in the ledger
// and for xact committed: a claim that a resend made once xact rolled
// back is not xact's. Run reports xactCommitted processed, and
// xactInProgress and xactUnknown unavailable (it may have committed, or
// commit yet); "" (rolled back), which it is also when xact is not known
// (an inbox attempt's, found in its row instead), failed.
func (s *PgxStore) claimCommitState(ctx context.Context, eventID string, xact int64, err error) string {
	return s.lostCommitState(ctx, xact, err, s.sql.claimCommitted, eventID, xact)
}

// lostCommitState reports what became of the transaction xact, whose
// COMMIT failed with err, as told by sql, run with args on another
// connection: sql answers xactInProgress while xact is still in progress
// to other sessions (its COMMIT not carried out yet, or waiting for
// synchronous replication: committed locally, its rows not yet visible),
// xactCommitted once it ended having committed what sql looks for,
// anything else when not. While xact is in progress it looks again, after
// waits that grow from commitPollMin to commitPollMax, until xact has
// ended; all of it within lostCommitWait (rollbackTimeout) of the failed
// COMMIT, whether or not ctx is done. Once commitArrivalWait has passed
// since the failed COMMIT with xact still in progress, it ends xact's
// session if that session sits idle in transaction, the COMMIT never
// having arrived (endIdleHolder, once): xact then ends at once, and the
// look-ups find how. A look-up handed a connection whose session ended is
// run again on another (retryStale). It is xactCommitted when xact
// committed; xactInProgress when xact was still in progress as the
// look-ups gave up; xactUnknown when a look-up failed, before any had
// found xact in progress as the time ran out; and "" when err tells that
// nothing was committed (the server's error, or a COMMIT never sent),
// when xact is 0 (not known), and when xact rolled back.
func (s *PgxStore) lostCommitState(ctx context.Context, xact int64, err error, sql string, args ...any) string {
	if xact == 0 || serverRolledBack(err) || errors.Is(err, pgx.ErrTxCommitRollback) || pgconn.SafeToRetry(err) {
		return ""
	}
	failed := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.lostCommitWait)
	defer cancel()
	seen := ""
	askedHolder := false
	for wait := commitPollMin; ; wait = min(2*wait, commitPollMax) {
		var state string
		// On a connection whose session ended while it sat idle (with the
		// one that committed, say) it is read again on another.
		_, err := s.readRow(ctx, sql, args, &state)
		switch {
		case err != nil && ctx.Err() != nil && seen != "":
			return seen // the time ran out during a look-up
		case err != nil:
			return xactUnknown
		case state != xactInProgress:
			if state == xactCommitted {
				return state
			}
			return ""
		}
		seen = state
		if !askedHolder && time.Since(failed) >= commitArrivalWait {
			askedHolder = true
			s.endIdleHolder(ctx, xact)
		}
		if !pause(ctx, wait) {
			return xactInProgress
		}
	}
}

// What the look-ups of lostCommitState answer of a transaction:
// still in progress to other sessions, or ended having committed what
// they look for (otherwise "not committed"); and what lostCommitState
// reports when no look-up answered.
const (
	xactInProgress = "in progress"
	xactCommitted  = "committed"
	xactUnknown    = "unknown"
)

// xactStateSQL is a look-up of lostCommitState: of the transaction
// whose id is the parameter xact, whether it is still in progress to this
// session's snapshot, or else whether committed, a condition, holds.
func xactStateSQL(xact, committed string) string {
	return `SELECT CASE
  WHEN NOT txid_visible_in_snapshot(` + xact + `, txid_current_snapshot()) THEN '` + xactInProgress + `'
  WHEN ` + committed + ` THEN '` + xactCommitted + `'
  ELSE 'not committed' END`
}

// endIdleHolder ends the session that holds xact, in progress, when
// that session is of this database and idle in transaction: the server
// waits for its client's next command, so the COMMIT never arrived (a
// network path that drops packets without a reset, where the server
// notices the client gone only when its TCP keepalive does, hours later
// perhaps). Left so, the transaction would stay in progress past every
// look-up, and hold its row locks, on which Stripe's resend of the event
// would wait. Once the session ends the transaction ends: rolled back, or
// committed when the COMMIT arrived just before; the look-ups report
// which. A session that runs (a COMMIT waiting for a synchronous standby
// or a deferred trigger, state active) is left alone. A refusal (a role
// that may not signal the session) or a failure is ignored: the look-ups
// go on as they would without it.
//
// Behind PgBouncer in transaction mode the pid is the server backend's,
// and ending it is still right: PgBouncer keeps that server connection
// for the lost client while its transaction is open, runs nothing else
// on it, and drops it (not the pool) once the server ends it.
func (s *PgxStore) endIdleHolder(ctx context.Context, xact int64) {
	var ended bool
	// Run again on another connection when handed a stale one, as a read
	// is: it ends a session only while xact is in progress, idle.
	_, _ = s.readRow(ctx, sqlEndIdleHolder, []any{xact}, &ended)
}

// sqlEndIdleHolder ends the session that holds the transaction whose id
// (txid_current's, with its epoch) is the parameter, if it is still in
// progress and that session is of this database and idle in
// transaction. pg_stat_activity's backend_xid is the 32-bit xid: two
// transactions in progress never share its low 32 bits, and xact is
// checked in progress in the same statement. Compared through text, it
// needs no xid8 (PostgreSQL 13).
const sqlEndIdleHolder = `SELECT pg_catalog.pg_terminate_backend(a.pid)
FROM pg_catalog.pg_stat_activity AS a
WHERE a.backend_xid::text::bigint = $1::bigint % 4294967296
  AND a.state = 'idle in transaction'
  AND a.datname = pg_catalog.current_database()
  AND NOT pg_catalog.txid_visible_in_snapshot($1, pg_catalog.txid_current_snapshot())`

// commitArrivalWait is how long after a failed COMMIT the look-ups of
// lostCommitState leave the session that holds the transaction, in
// progress, idle in transaction before ending it (endIdleHolder): a
// COMMIT that went out on a live network reaches the server, and its
// session reads it, well within it; ended sooner, a session could be
// ended with the COMMIT waiting, unread, in its socket, and a transaction
// that would have committed be rolled back: answered 503 and applied by
// Stripe's resend instead, once all the same, but a delivery failed for
// nothing.
const commitArrivalWait = 500 * time.Millisecond

// commitPollMin and commitPollMax bound the waits between the look-ups of
// lostCommitState while the transaction is in progress: a COMMIT
// carried out late is most often a few milliseconds late, one waiting for
// a synchronous standby as long as the standby takes.
const (
	commitPollMin = time.Millisecond
	commitPollMax = 50 * time.Millisecond
)

// serverRolledBack reports whether err is the server's answer that a
// COMMIT did not go through: an error its session outlived. A FATAL or
// PANIC one ends the session, possibly once the COMMIT went through: a
// session terminated as it waits for synchronous replication has
// committed locally.
func serverRolledBack(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Severity != "FATAL" && pgErr.Severity != "PANIC"
}

const (
	sqlSavepoint           = `SAVEPOINT idempotency_claimed`
	sqlRollbackToSavepoint = `ROLLBACK TO SAVEPOINT idempotency_claimed`
)

// rollbackTimeout bounds a rollback that runs after the handler's context
// is done.
const rollbackTimeout = 5 * time.Second

// maxBeginAttempts bounds the calls of retryStale: about one per stale
// connection in a pool.
const maxBeginAttempts = 16

// keepSkipped undoes the handler's writes and records the claim as skipped,
// and with a fence the inbox row too (the savepoint kept its fence), in one
// round trip.
func (s *PgxStore) keepSkipped(ctx context.Context, tx pgx.Tx, c *Claim, reason string) error {
	if c.fence != nil {
		batch := &pgx.Batch{}
		batch.Queue(sqlRollbackToSavepoint)
		batch.Queue(s.sql.markSkipped, c.EventID, reason)
		batch.Queue(s.inbox.skip, c.EventID)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return errorf("recording skipped event: %w", err)
		}
		return nil
	}
	if _, err := tx.Exec(ctx, sqlRollbackToSavepoint); err != nil {
		return errorf("rolling back a skipped event: %w", err)
	}
	if _, err := tx.Exec(ctx, s.sql.markSkipped, c.EventID, reason); err != nil {
		return errorf("recording skipped event: %w", err)
	}
	return nil
}

// rollback ends tx on a context that outlives ctx's cancellation, so a
// timed-out handler still returns its connection cleanly. A panic in the
// code of the connection (a pgx tracer) as the ROLLBACK goes out closes
// the connection (closeAfterPanic) and goes on up.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			closeAfterPanic(ctx, tx)
			panic(v)
		}
	}()
	_ = tx.Rollback(ctx) // pgx.ErrTxClosed after a commit or a failed one: nothing to do
}

// closeAfterPanic closes the connection of tx, whose rollback panicked
// before it went out: the server ends the transaction, and its locks,
// which would otherwise be held for as long as the process lives. The
// rollback tried again fails at once on the closed connection, which
// gives a pool's connection back to be destroyed; should the connection's
// code panic again, the connection is closed all the same.
func closeAfterPanic(ctx context.Context, tx pgx.Tx) {
	defer func() { _ = recover() }()
	_ = tx.Conn().Close(ctx)
	_ = tx.Rollback(ctx)
}

// Ping implements [Store]: it runs SELECT 1 in a read-only transaction.
// It passes on a database that cannot store (a standby, or
// default_transaction_read_only on), where Run fails with
// [ErrStoreUnavailable]: it tells that the database answers (idemctl
// reads a standby through it), not that it can store deliveries.
func (s *PgxStore) Ping(ctx context.Context) error {
	if err := s.made("PgxStore.Ping"); err != nil {
		return err
	}
	err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	return s.unavailableErr(err)
}

// LookupEvent returns the ledger record of a committed event claim. A
// skip reason longer than EventRecord.SkipReason's bound, kept by a
// release that did not cut it, is read to its first 1000 bytes, as a new
// one is kept; the row is unchanged. An id no claim can have (empty, a
// NUL byte, invalid UTF-8, over 1024 bytes) is refused with
// [ErrInvalidKey], as [Store.Run] refuses it in a Claim.
func (s *PgxStore) LookupEvent(ctx context.Context, eventID string) (EventRecord, bool, error) {
	if err := s.made("PgxStore.LookupEvent"); err != nil {
		return EventRecord{}, false, err
	}
	var r EventRecord
	if err := checkEventID("LookupEvent", eventID); err != nil {
		return r, false, err
	}
	found, err := s.readRow(ctx, s.sql.lookupEvent, []any{eventID}, r.columns()...)
	r.keepReason()
	return r, found, err
}

// eventColumns are the ledger's columns in the order of
// EventRecord.columns. skip_reason is read to its first maxKeptTextLen
// characters, which hold the first maxKeptTextLen bytes keepReason keeps:
// a row skipped before reasons were cut may hold one of megabytes, which
// would otherwise come whole over the connection, for each row of a list.
var eventColumns = `event_id, event_type, object_id, account, livemode, outcome, left(skip_reason, ` +
	strconv.Itoa(maxKeptTextLen) + `), received_at, processed_at`

// columns are the scan destinations of eventColumns.
func (r *EventRecord) columns() []any {
	return []any{&r.EventID, &r.EventType, &r.ObjectID, &r.Account, &r.Livemode, &r.Outcome, &r.SkipReason, &r.ReceivedAt, &r.ProcessedAt}
}

// keepReason cuts the SkipReason of r, read from the ledger, as a new
// row's is cut (keptText), so that EventRecord.SkipReason holds to its
// bound for a row skipped before reasons were cut: one that is no longer
// than that is unchanged.
func (r *EventRecord) keepReason() { r.SkipReason = keptText(r.SkipReason) }

// ListEvents returns the committed event claims that f selects, newest
// first (by ProcessedAt, then event id), in one query (one round trip on a
// pool or a connection) that reads the ledger's index on processed_at, or
// with an ObjectID or an EventType its index on the object or the type,
// with processed_at (migration 012): the rows of one object or type, not
// the whole ledger. A skip reason is read to its first 1000 bytes, as
// LookupEvent reads it.
func (s *PgxStore) ListEvents(ctx context.Context, f EventFilter) ([]EventRecord, error) {
	if err := s.made("PgxStore.ListEvents"); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	var out []EventRecord
	// A read: on a connection whose session ended while it sat idle it
	// is read again on another.
	err := retryStale(ctx, func() error {
		return s.autocommit(ctx, func(q pgxQuerier) error {
			rows, err := q.Query(ctx, s.sql.listEvents, listEventsArgs(f)...)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventRecord, error) {
				var r EventRecord
				err := row.Scan(r.columns()...)
				r.keepReason()
				return r, err
			})
			return err
		})
	})
	if err != nil {
		return nil, errorf("listing events: %w", s.unavailableErr(err))
	}
	return out, nil
}

// listEventsArgs are the arguments of the statement listEvents for f.
func listEventsArgs(f EventFilter) []any {
	return []any{texts(f.Outcomes), f.EventType, f.ObjectID, filterBound(f.Since), filterBound(f.Until), f.Limit,
		f.Account, f.After.EventID, optionalTime(f.After.ProcessedAt)}
}

// LookupGuard returns the committed claim of a natural key. A scope or
// a key no claim can have (empty, a NUL byte, invalid UTF-8, over 1024
// bytes) is refused with [ErrInvalidKey], as [Tx.Guard] refuses it.
func (s *PgxStore) LookupGuard(ctx context.Context, scope, key string) (GuardRecord, bool, error) {
	if err := s.made("PgxStore.LookupGuard"); err != nil {
		return GuardRecord{}, false, err
	}
	var r GuardRecord
	if err := checkLookedUpGuard("LookupGuard", scope, key); err != nil {
		return r, false, err
	}
	found, err := s.readRow(ctx, s.sql.lookupGuard, []any{scope, key}, &r.Scope, &r.Key, &r.EventID, &r.ClaimedAt)
	return r, found, err
}

// queryRow scans the one row sql finds into dest, in one round trip on a
// pool or a connection (see autocommit); found is false when there is none.
func (s *PgxStore) queryRow(ctx context.Context, sql string, args []any, dest ...any) (bool, error) {
	found := false
	err := s.autocommit(ctx, func(q pgxQuerier) error {
		err := q.QueryRow(ctx, sql, args...).Scan(dest...)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return false, s.unavailableErr(err)
	}
	return found, nil
}

// readRow is queryRow for a read, which changes nothing: on a connection
// whose session ended while it sat idle it is read again on another
// (retryStale).
func (s *PgxStore) readRow(ctx context.Context, sql string, args []any, dest ...any) (found bool, err error) {
	err = retryStale(ctx, func() error {
		found, err = s.queryRow(ctx, sql, args, dest...)
		return err
	})
	return found, err
}

// pgxTx is a PgxStore transaction.
type pgxTx struct {
	txState
	tx    pgx.Tx
	s     *PgxStore
	early []earlyGuard
}

// earlyGuard is a key of Claim.Guards, claimed in the claim's round trip.
type earlyGuard struct {
	GuardKey
	first bool // the claim was new
	asked bool // Guard has reported it, or releaseUnasked released it
}

// releaseUnasked deletes the early claims the handler has not asked for,
// so that they are not kept for an action this event did not run, and
// so that Guard claims them anew: the store calls it when the handler
// returns, and PgxTx's Begin before the handler's savepoint.
func (t *pgxTx) releaseUnasked(ctx context.Context) error {
	for i := range t.early {
		g := &t.early[i]
		if !g.first || g.asked {
			continue
		}
		t.count(1)
		if _, err := t.tx.Exec(ctx, t.s.sql.releaseGuard, g.Scope, g.Key, t.claim.EventID); err != nil {
			return errorf("releasing an unused guard: %w", err)
		}
		g.asked = true // released: Guard claims it with a statement of its own
	}
	return nil
}

func (t *pgxTx) Guard(ctx context.Context, scope, key string) (bool, error) {
	if err := checkGuardKey(scope, key); err != nil {
		return false, err
	}
	// Counted when its statement goes out: answered from an early claim,
	// it sends none (see chainedSessionLost).
	if err := t.enterCounting(0); err != nil {
		return false, err
	}
	defer t.leave()
	for i := range t.early {
		if g := &t.early[i]; g.Scope == scope && g.Key == key && !g.asked {
			g.asked = true
			return g.first, nil
		}
	}
	t.count(1)
	tag, err := t.tx.Exec(ctx, t.s.sql.guard, scope, key, t.claim.EventID)
	if err != nil {
		return false, errorf("guard %s: %w", scope, err)
	}
	return tag.RowsAffected() == 1, nil
}

// notifyWorkers implements taskTx.
func (t *pgxTx) notifyWorkers() { t.s.notifyTaskWorkers() }

// taskStore implements taskTx.
func (t *pgxTx) taskStore() inboxBackend { return t.s }

// taskStore implements inboxBackend.
func (s *PgxStore) taskStore() inboxBackend { return s }

// whenTasksDue implements taskTx: the tasks are due as the commit returns.
func (t *pgxTx) whenTasksDue(fn func()) { t.AfterCommit(func(context.Context) { fn() }) }

func (t *pgxTx) enqueueTask(ctx context.Context, r *inboxRow) (bool, error) {
	if err := t.enter(); err != nil {
		return false, err
	}
	defer t.leave()
	tag, err := t.tx.Exec(ctx, t.s.inbox.enqueueTask, r.EventID, r.EventType, r.Created, r.Payload, r.Trace)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// readCommitted is the isolation of the store's own transactions that wait
// for a lock and then read (Migrate, a Prune batch, Forget), whatever the
// server's default: at REPEATABLE READ the snapshot would be taken by the
// lock statement, before the wait, and miss what the holder committed (a
// second replica's Migrate would create the schema again and fail).
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// PostgreSQL error codes the store acts on.
const (
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgDuplicatePrepared    = "42P05"
	pgInvalidStatementName = "26000"
	pgUndefinedTable       = "42P01"
	pgUndefinedColumn      = "42703"
)

// retryConflicts calls fn, which commits nothing when it fails, and
// again while it fails for a conflict (retryable), up to maxAttempts calls
// in all or until ctx is done, after a short pause at random
// (conflictPause): the transactions that met in a deadlock or a
// serialization failure, run again at once, would meet again in the same
// order, and one of them could run out of attempts. It also calls fn
// again, at once, when fn's transaction was begun by a chained commit on a
// session that had ended (chainedSessionLost, which it unwraps): no other
// transaction was in its way. When ctx ends before the next call, its
// error is returned, naming the last call's (rerunCut), as MemoryStore's
// Run returns it.
func (s *PgxStore) retryConflicts(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		lost, chained := errors.AsType[*chainedSessionLost](err)
		if chained {
			err = lost.err
		}
		if err == nil || !(retryable(err) || chained) || attempt == maxAttempts {
			return err
		}
		if ctx.Err() != nil || !chained && !s.conflictWait(ctx, attempt) {
			return rerunCut(ctx, err)
		}
	}
}

// conflictPauseBase bounds the pause after a conflict's first failed
// attempt (conflictPause): about the span of a short transaction on a
// busy machine, begin to commit, so that two transactions that failed
// together and draw pauses in it mostly begin again apart. (At 5 ms the
// three-way deadlock of the conformance suite, under load, had its
// transactions collide again as often as without a pause.)
const conflictPauseBase = 10 * time.Millisecond

// conflictPause is the pause after attempt failed for a conflict: drawn by
// randN (rand.Int64N) in [0, conflictPauseBase·2^(attempt-1)), 0–10 ms
// after the first attempt, 0–80 ms after the fourth, less than 150 ms in
// all over maxAttempts. The draw, not the length, parts the transactions: each
// of those that collided begins again at its own time (full jitter); the
// bound doubles so that a collision among more of them than one pause
// parts is parted by the next, while a delivery is held back by
// milliseconds, not by a backoff's seconds.
func conflictPause(attempt int, randN func(n int64) int64) time.Duration {
	return time.Duration(randN(int64(conflictPauseBase) << min(attempt-1, maxAttempts)))
}

// waitConflict waits conflictPause(attempt) and reports true, or false
// once ctx ends first.
func waitConflict(ctx context.Context, attempt int) bool {
	return pause(ctx, conflictPause(attempt, rand.Int64N))
}

// retryable reports a conflict that a new attempt of the whole transaction
// resolves: a serialization failure or a deadlock.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == pgSerializationFailure || pgErr.Code == pgDeadlockDetected)
}

// translate wraps errors that mean the database cannot be reached in
// ErrStoreUnavailable; a handler's own error (see handlerError) is
// returned as it is, followed by the cure when a statement of the
// handler's met another client's cached statement (statementCacheHint);
// runOnce gave it poolFullHint's cure, while the handler's transaction
// still held its connection of the pool.
// One whose connection is gone or unknown is translated as the store's
// own are, but for the cure of the store's missing tables and columns
// (notMigratedHint): its tables are the handler's.
func (s *PgxStore) translate(outcome Outcome, err error) (Outcome, error) {
	h, handlers := errors.AsType[*handlerErr](err)
	switch {
	case handlers && !h.connGone:
		return outcome, statementCacheHint(h.err)
	case handlers:
		err = statementCacheHint(dateStyleHint(h.err))
	default:
		err = s.poolFullHint(s.notMigratedHint(statementCacheHint(dateStyleHint(err))))
	}
	switch {
	case err == nil || outcome == OutcomeProcessed || !unavailable(err):
		return outcome, err
	case errors.Is(err, ErrStoreUnavailable): // said already (Run's COMMIT in doubt)
		return OutcomeUnavailable, err
	}
	return OutcomeUnavailable, errorf("%w: %w", ErrStoreUnavailable, err)
}

// statementCacheHint adds the cure to err, once, when it is PostgreSQL's
// answer to a statement of pgx's cache (stmtcache_...) that another client
// prepared, or that was prepared on another server connection: what a
// transaction-pooling PgBouncer before 1.21 does with pgx's default exec
// mode. A handler's error is wrapped, not changed: errors.Is and errors.As
// find it, and its text is quoted as it is.
func statementCacheHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == pgDuplicatePrepared || pgErr.Code == pgInvalidStatementName) &&
		strings.Contains(pgErr.Message, `"stmtcache_`) && !strings.Contains(err.Error(), statementCacheCure) {
		return errorf("%w (pgx's cached prepared statements on a connection pooler in transaction mode, such as PgBouncer: "+statementCacheCure+")", err)
	}
	return err
}

// dateStyleCure is what a store's connections need for pgx to read the
// times the server sends as text.
const dateStyleCure = "set DateStyle=ISO for the store's connections (ConnConfig.RuntimeParams, or ALTER ROLE ... SET DateStyle = 'ISO')"

// dateStyleHint adds the cure to err, once, when it is pgx's failure to
// read a time the server sent as text (default_query_exec_mode exec or
// simple_protocol) in a DateStyle other than ISO: Migrate refuses such
// connections (see timesReadable), but a process that serves without
// running it meets the setting at its first read of a time.
func dateStyleHint(err error) error {
	if scanErr, ok := errors.AsType[pgx.ScanArgError](err); ok && scanErr.Err != nil &&
		strings.Contains(scanErr.Err.Error(), "invalid PostgreSQL date/time value") && !strings.Contains(err.Error(), dateStyleCure) {
		return errorf("%w (pgx reads a time sent as text only in DateStyle ISO: "+dateStyleCure+")", err)
	}
	return err
}

// notMigratedHint adds the cure to err when it is PostgreSQL's answer to a
// statement of the store's own that found one of its tables, or a column
// of one, missing: Migrate never ran on the store's schema (a process
// that serves without running it, another PgxConfig.Schema than the
// migrated one), or not since an upgrade. A missing table's message names
// it (idempotency_...); a missing column's names only the column (a
// schema an earlier release migrated lacks a later migration's column,
// `column "redrives" does not exist`), and is the store's own all the
// same: a handler's error never reaches it (see translate), its tables
// are its own.
func (s *PgxStore) notMigratedHint(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case !errors.As(err, &pgErr):
	case pgErr.Code == pgUndefinedTable && strings.Contains(pgErr.Message, "idempotency_"):
		// A worker whose Schema is not the HTTP process's, migrated,
		// would poll an empty inbox of its own: name that cure too.
		return errorf("%w ("+notMigrated+", or set PgxConfig.Schema to the schema the service's other processes use)", err, s.cfg.Schema)
	case pgErr.Code == pgUndefinedColumn:
		return errorf("%w ("+notMigrated+")", err, s.cfg.Schema)
	}
	return err
}

// notMigrated is notMigratedHint's text, of the schema's name.
const notMigrated = "the store's tables are missing from schema %q, or older than this release: run PgxStore.Migrate on it first"

// pgxPoolStater tells how many connections a pool has and lends: a
// *pgxpool.Pool.
type pgxPoolStater interface {
	Stat() *pgxpool.Stat
}

// poolFullCure ends the hint of poolFullHint.
const poolFullCure = "a handler that reads or writes through another connection of the same pool, " +
	"such as a *sql.DB from stdlib.OpenDBFromPool, holds two at once; or more deliveries and workers at once than MaxConns"

// poolFullHint adds the cause and the cure to err, once, when it is the
// failure of the store's own operation, or a handler's, that waited for a
// connection of the store's pool until the context's deadline, every
// connection in use:
// a handler that holds a second connection of the pool while its
// transaction holds one (a *sql.DB opened on it), more deliveries and
// workers at once than MaxConns, or rows left open elsewhere, and nothing
// said why. pgxpool fails such a wait with the context's error itself;
// a statement that ran into the deadline (a lock wait, a slow query)
// fails with pgconn's timeout error, which says nothing of the pool. A
// cancellation is left as it is: pgconn fails a cancelled statement with
// the context's error itself too, and a busy pool's in-flight statements,
// cancelled at a shutdown, did not wait for a connection. Only a pool has
// connections to count: a *pgx.Conn or a PgxBeginner of the user's keeps
// the error as it is. It is called on a failure alone and costs nothing
// else.
func (s *PgxStore) poolFullHint(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return err
	}
	p, ok := s.db.(pgxPoolStater)
	if !ok {
		return err
	}
	if st := p.Stat(); st.AcquiredConns() >= st.MaxConns() && !strings.Contains(err.Error(), poolFullCure) {
		return errorf("%w (waited for a connection of the store's pool: all %d of MaxConns in use; "+poolFullCure+")", err, st.MaxConns())
	}
	return err
}

// statementCacheCure ends the hint of statementCacheHint.
const statementCacheCure = "add default_query_exec_mode=exec to the database URL"

// handlerError is err, which a handler returned, marked as the handler's
// own, and whether tx's connection is gone (or unknown): a handler that
// met a network error or an EOF of its own (another service it called)
// on a connection still open failed, and is not answered 503 as if the
// database had gone away; one whose statement met a database that went
// away is.
func handlerError(tx pgx.Tx, err error) error {
	// A pgx.Tx of a PgxBeginner's own may have no *pgx.Conn to ask: the
	// error is then translated as one whose connection is gone.
	c := tx.Conn()
	return &handlerErr{err: err, connGone: c == nil || c.IsClosed()}
}

// aborted reports that tx's transaction is aborted: a statement in it
// failed, and PostgreSQL refuses every other and rolls back its COMMIT. A
// savepoint rolled back to after the failure ends that. It is false when
// tx has no *pgx.Conn to ask.
func aborted(tx pgx.Tx) bool {
	c := tx.Conn()
	return c != nil && !c.IsClosed() && c.PgConn().TxStatus() == 'E'
}

// handlerErr is a handler's error, which translate returns as it is (with
// the cure of statementCacheHint at most) when connGone is false.
type handlerErr struct {
	err      error
	connGone bool // its transaction's connection is closed, or unknown
}

func (e *handlerErr) Error() string { return e.err.Error() }
func (e *handlerErr) Unwrap() error { return e.err }

// unavailableErr translates the error of an operation that records no
// outcome: err, wrapped in ErrStoreUnavailable when it means the database
// cannot be reached.
func (s *PgxStore) unavailableErr(err error) error {
	_, err = s.translate(OutcomeFailed, err)
	return err
}

// texts are v's values as the strings of a text[] parameter; never nil, so
// that an empty v is an empty array rather than NULL.
func texts[T ~string](v []T) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = string(x)
	}
	return out
}

// optionalTime is t as a nullable timestamptz: NULL for the zero time.
func optionalTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// filterBound is a filter's Since or Until as a query compares it with
// the microseconds PostgreSQL keeps: rounded up to the next microsecond,
// so that "Since <= t" and "t < Until" select the times they select at
// full precision (pgx would truncate it: Until T+1ns would become Until T
// and leave out what was stored at T). A zero time is an open bound.
func filterBound(t time.Time) pgtype.Timestamptz {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		t = r.Add(time.Microsecond)
	}
	return optionalTime(t)
}

// unavailable reports errors of the connection rather than of the
// transaction: refused or lost connections, a server shutting down or
// starting up, and one that cannot store (a standby, or a session
// read-only by default).
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", // admin_shutdown (also pg_terminate_backend)
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now
			pgErr.Code == "53300", // too_many_connections
			pgErr.Code == "25006": // read_only_sql_transaction
			return true
		}
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) ||
		// A pgxpool closed (a shutdown that closed it while the HTTP
		// server still served): no connection to be had, as with the
		// database gone; the error is puddle's, which pgxpool returns.
		errors.Is(err, puddle.ErrClosedPool)
}

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		base := path.Base(e)
		num, name, ok := strings.Cut(strings.TrimSuffix(base, ".up.sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, errorf("migration file %s is not named NNN_name.up.sql", base)
		}
		b, err := migrationFiles.ReadFile(e)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: name, sql: withoutLineComments(string(b))})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// withoutLineComments drops the lines of sql that are a comment: the
// schema placeholders of a comment are replaced too, and a comment is no
// place for a name, which must stay inside its quotes.
func withoutLineComments(sql string) string {
	lines := strings.Split(sql, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// Migrate creates the schema and the store's tables, applying the embedded
// migrations it has not applied yet. It is idempotent, and safe when several
// replicas start at once: a transaction-scoped advisory lock per schema
// serialises them, and the pending migrations commit together with their
// version rows in idempotency_migrations, apart from the versions of the
// service's own migration tool (golang-migrate's schema_migrations,
// goose's goose_db_version), which it leaves as they are: run it on every
// start or deploy beside that tool, not as one of the tool's migrations,
// which would never apply a later release's (the README's "With sqlc").
// A migration's DDL may deadlock
// with the transactions of replicas still serving (an index built on the
// guards while an event transaction that claimed a guard waits for a table
// Migrate holds): PostgreSQL then fails one of them, and Migrate, like an
// event transaction, runs again, up to 5 attempts in all. Versions a
// newer release applied are left as they are, so that a deploy can be
// rolled back. A store whose schema it has not run on since this release
// fails with PostgreSQL's error for the table or column it misses, which
// ends by naming the schema and this cure.
//
// It runs DDL only for what is missing: its role needs CREATE on the
// database to create the schema, CREATE on the schema to create the
// tables, and to own the tables (later migrations alter them) only when
// there is something to do. A service's role that owns nothing passes on
// a schema migrated up to this release, reading idempotency_migrations;
// on one an earlier release migrated it fails with PostgreSQL's "must be
// owner of table ..." after the migration's name, having applied none.
func (s *PgxStore) Migrate(ctx context.Context) error {
	if err := s.made("PgxStore.Migrate"); err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	if err := s.retryConflicts(ctx, func() error { return s.migrateOnce(ctx, ms) }); err != nil {
		return errorf("migrate schema %s: %w", pgx.Identifier{s.cfg.Schema}.Sanitize(), s.unavailableErr(err))
	}
	return nil
}

// keepLockTimeout keeps the transaction's lock_timeout, for
// restoreLockTimeout to put back, before a statement sets another for
// the statements in between. Both are local to the transaction: nothing
// stays on a pooled session.
//
// noLockTimeout sets it to 0, for a wait on one of the store's own
// advisory locks, which another process holds for as long as its work
// runs: a role's or database's lock_timeout, meant for business writes,
// would cut it whenever that work took longer. restoreLockTimeout,
// evaluated once the lock is held, puts it back for the statements after.
const (
	keepLockTimeout    = `SELECT set_config('idempotency.lock_timeout', current_setting('lock_timeout'), true), `
	noLockTimeout      = keepLockTimeout + `set_config('lock_timeout', '0', true)`
	restoreLockTimeout = `set_config('lock_timeout', current_setting('idempotency.lock_timeout'), true)`
)

// migrateOnce applies the pending migrations ms in one transaction.
func (s *PgxStore) migrateOnce(ctx context.Context, ms []migration) error {
	schema := pgx.Identifier{s.cfg.Schema}.Sanitize()
	return pgx.BeginTxFunc(ctx, s.db, readCommitted, func(tx pgx.Tx) error {
		// The lock is held by another replica's Migrate for as long as it
		// runs: lock_timeout (a role's or database's, meant for business
		// writes) does not cut this wait; it is back in force for the
		// migrations' DDL, which waits for the tables' users.
		if _, err := tx.Exec(ctx, noLockTimeout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.migrate:' || $1, 0)), `+restoreLockTimeout, s.cfg.Schema); err != nil {
			return err
		}
		// DDL only when something is missing: a role that may use the
		// schema but not create objects in the database still starts.
		// The time read alongside is the check of timesReadable.
		var haveSchema, haveLedger bool
		var dateStyle string
		var now time.Time
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
       to_regclass($2) IS NOT NULL, current_setting('DateStyle'), now()`, s.cfg.Schema, schema+`.idempotency_migrations`).Scan(&haveSchema, &haveLedger, &dateStyle, &now)
		if err != nil {
			return timesReadable(err, dateStyle)
		}
		if !haveSchema {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
				return err
			}
		}
		if !haveLedger {
			if _, err := tx.Exec(ctx, `CREATE TABLE `+schema+`.idempotency_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT version FROM `+schema+`.idempotency_migrations`)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		done := make(map[int]bool, len(applied))
		for _, v := range applied {
			done[int(v)] = true
		}
		// For the dollar-quoted bodies of DO blocks, which must not hold
		// the name as text (a name with the block's tag would end the
		// body): they read it here, and quote it with format's %I.
		if _, err := tx.Exec(ctx, `SELECT set_config('idempotency.migrate_schema', $1, true)`, s.cfg.Schema); err != nil {
			return err
		}
		// One pass: a name that holds "{{schema}}" itself must not have
		// it replaced again, raw, inside the literal the first put it in.
		placeholders := strings.NewReplacer("{{schema_literal}}", sqlLiteralText(schema), "{{schema}}", schema)
		for _, m := range ms {
			if done[m.version] {
				continue
			}
			if _, err := tx.Exec(ctx, placeholders.Replace(m.sql)); err != nil {
				return fmt.Errorf("migration %03d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.idempotency_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
}

// timesReadable explains err, the failure of migrateOnce's first query,
// when the time in its 4th column could not be read (the 3rd is the
// session's DateStyle): pgx reads a time sent as text (in
// default_query_exec_mode exec or simple_protocol) in DateStyle ISO only,
// and every time the store reads would fail as this one did.
func timesReadable(err error, dateStyle string) error {
	if scanErr, ok := errors.AsType[pgx.ScanArgError](err); ok && scanErr.ColumnIndex == 3 {
		return errorf("the server sends times in DateStyle %q, which pgx cannot read as text (default_query_exec_mode exec or simple_protocol): "+
			dateStyleCure+": %w", dateStyle, err)
	}
	return err
}

// staleConn reports a failure of the connection the statements went out
// on, not of the database, so another connection may be tried (retryStale
// says when that is safe). A failure to connect is not one: the database
// itself is unreachable.
func staleConn(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P01" || pgErr.Code == "57P02" || strings.HasPrefix(pgErr.Code, "08")
	}
	return pgconn.SafeToRetry(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
