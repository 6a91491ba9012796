package idempotency

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/internal/eventtypes"
)

// LiveInboxes returns how many inboxes built on hs are still in use: those
// a committed task wakes.
func LiveInboxes(hs *Handlers) int { return len(hs.wakers.live()) }

// MemoryWaiting returns how many transactions wait for a key held by
// another transaction, for the conformance suite.
func MemoryWaiting(s *MemoryStore) int {
	n, _, _ := storeWaiters(s)
	return n
}

// MemoryObjectLocks returns the objects whose lock (OnCurrent's: its
// scope, a space and its key) tx, a MemoryStore's, holds.
func MemoryObjectLocks(tx Tx) []string {
	mtx := tx.(*memoryTx)
	mtx.s.mu.Lock()
	defer mtx.s.mu.Unlock()
	var locks []string
	for _, k := range mtx.held {
		if k.record == recordObject {
			locks = append(locks, k.scope+" "+k.key)
		}
	}
	return locks
}

// PgxLocalWaiting returns how many runs wait in the process for another run
// of the same event.
func PgxLocalWaiting(s *PgxStore) int {
	n, _, _ := storeWaiters(s)
	return n
}

// InboxIdle reports whether in's Run waits, and has had no wake since its
// last pass began: only a wake, a poll or its end makes it lease again.
// (Asking whether a wake is pending would not do: Run may have taken it
// and not yet begun the pass.)
func InboxIdle(in *Inbox) bool { return in.idleAt.Load() == in.signals.Load()+1 }

// InboxGate returns how many of the workers of in's Run are inside its
// gate (applying, or waiting in the queue for an event to apply) and the
// gate's limit: zeros before Run.
func InboxGate(in *Inbox) (active, limit int) {
	g := in.gate.Load()
	if g == nil {
		return 0, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active, g.limit
}

// InboxLeased is an inbox event leased by LeaseInbox, for a test to apply
// late or never.
type InboxLeased struct{ row inboxRow }

// EventID is the leased event's id.
func (l InboxLeased) EventID() string { return l.row.EventID }

// Attempt is the attempt the lease was taken for.
func (l InboxLeased) Attempt() int { return l.row.Attempt }

// Payload is the leased copy of the event's body.
func (l InboxLeased) Payload() []byte { return l.row.Payload }

// LeaseInbox leases up to n due events of in as its workers do, and applies
// none: a worker that died, or one that ApplyLeased resumes late.
func LeaseInbox(ctx context.Context, in *Inbox, n int) ([]InboxLeased, error) {
	rows, err := in.lease(ctx, n)
	out := make([]InboxLeased, len(rows))
	for i, r := range rows {
		out[i] = InboxLeased{r}
	}
	return out, err
}

// ApplyLeased applies l as the worker that leased it would: fenced on its
// attempt, however long ago that was.
func ApplyLeased(ctx context.Context, in *Inbox, l InboxLeased) { in.attempt(ctx, l.row, nil) }

// ApplyChained applies ls in order as one of Run's workers does, each
// event's commit beginning the next one's transaction when it can, and
// returns how many commits did.
func ApplyChained(ctx context.Context, in *Inbox, ls ...InboxLeased) int {
	return RunChainedWorker(ctx, ctx, in, NewWorkGate(1), ls, nil)
}

// WorkGate is the gate of Run's workers (see workGate).
type WorkGate struct{ g *workGate }

// NewWorkGate is a gate that lets limit workers in.
func NewWorkGate(limit int) WorkGate { return WorkGate{newWorkGate(limit)} }

// Enter enters the gate, as a worker other than RunChainedWorker's would.
func (g WorkGate) Enter() { g.g.enter() }

// Leave leaves the gate.
func (g WorkGate) Leave() { g.g.leave() }

// SetLimit sets the gate's limit, as Run does.
func (g WorkGate) SetLimit(n int) { g.g.setLimit(n) }

// RunChainedWorker runs one of Run's workers, inside gate, on the events
// of queue: first, queued before it starts, then those sent to more (none
// when nil), until more is closed. stop is Run's context, ctx the
// attempts'. It returns how many of its commits began the next event's
// transaction.
func RunChainedWorker(ctx, stop context.Context, in *Inbox, gate WorkGate, first []InboxLeased, more <-chan InboxLeased) int {
	queue := make(chan inboxRow, len(first)+1)
	for _, l := range first {
		queue <- l.row
	}
	if more == nil {
		close(queue)
	} else {
		go func() {
			defer close(queue)
			for l := range more {
				queue <- l.row // the worker takes every row until the queue is closed
			}
		}()
	}
	w := inboxWorker{in: in, stop: stop, queue: queue, aheadCount: new(atomic.Int64), busy: new(atomic.Int64), gate: gate.g, cut: new(shutdownCut)}
	w.run(ctx)
	return w.chain.chained
}

// ApplyWithBegun applies y as a worker whose chain holds the transaction a
// commit began for x, x's claim inside (the commit of a transaction that
// wrote nothing, chained as a worker's commit is), and which no attempt at
// x took: the state a worker that took x ahead and then never attempted it
// would leave. It reports whether that commit began x's transaction; what
// the attempt at y left of it is rolled back before it returns.
func ApplyWithBegun(ctx context.Context, in *Inbox, x, y InboxLeased) (bool, error) {
	s := in.store.(*PgxStore)
	var ch txChain
	env, err := x.row.parsed()
	if err != nil {
		return false, err
	}
	c := in.d.claim(env, x.row.ReceivedAt, in.fence(&x.row, &ch))
	ch.next = func() *Claim { return &c }
	tx, err := s.db.BeginTx(ctx, s.opts)
	if err != nil {
		return false, err
	}
	if err := s.commit(ctx, tx, &ch); err != nil {
		return false, err
	}
	ch.next = nil
	begun := ch.begun != nil
	in.attempt(ctx, y.row, &ch)
	ch.discard(ctx)
	return begun, nil
}

// ReleaseLeased gives l back unapplied, as Run does with the events it
// leased ahead when it stops.
func ReleaseLeased(ctx context.Context, in *Inbox, l InboxLeased) { in.release(ctx, &l.row) }

// ReleaseLeasedPending gives l back unapplied as a process of an earlier
// version did, whatever l's state before its lease: pending and due at
// once, at the attempt before l's, with that attempt's start and error.
func ReleaseLeasedPending(ctx context.Context, in *Inbox, l InboxLeased) (bool, error) {
	return in.store.inboxSettle(ctx, l.row.EventID, l.row.Attempt, l.row.AttemptedAt, InboxPending, l.row.LastError, in.cfg.Now(), in.cfg.Now(), true, l.row.PrevAttemptedAt)
}

// SettleLeased records the end of l's attempt as its worker would, and
// reports whether the fence let it.
func SettleLeased(ctx context.Context, in *Inbox, l InboxLeased, st InboxState, lastError string) (bool, error) {
	return in.store.inboxSettle(ctx, l.row.EventID, l.row.Attempt, l.row.AttemptedAt, st, lastError, in.cfg.Now(), in.cfg.Now(), false, time.Time{})
}

// PgxInboxListen is s's LISTEN loop, for the notification tests.
func PgxInboxListen(ctx context.Context, s *PgxStore, wake func()) error {
	return s.inboxListen(ctx, func() {}, wake)
}

// PgxInboxNotify is s's NOTIFY, for the notification tests.
func PgxInboxNotify(ctx context.Context, s *PgxStore) error { return s.inboxNotify(ctx) }

// InboxConfigWithDefaults returns cfg as NewInbox completes it.
func InboxConfigWithDefaults(cfg InboxConfig) (InboxConfig, error) {
	err := cfg.setDefaults()
	return cfg, err
}

// PgxLeasePlan is the plan PostgreSQL makes for the lease statement on
// conn, as the lease transaction plans it (with its planner settings
// unless bare is set): generic, from the statistics of the moment.
func PgxLeasePlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, bare bool) (string, error) {
	settings := leaseSettings
	if bare {
		settings = genericPlanSetting
	}
	return genericPlan(ctx, conn, settings, s.inbox.lease, `now(), 8, now() + interval '1 minute'`)
}

// genericPlanSetting makes the transaction's prepared statements plan
// generically, as a connection's cached statement does after five runs.
const genericPlanSetting = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// genericPlan is the plan PostgreSQL makes for stmt on conn, prepared in
// a transaction that ran settings, and explained with args: generic, from
// the statistics of the moment.
func genericPlan(ctx context.Context, conn *pgx.Conn, settings, stmt, args string) (string, error) {
	return explainGeneric(ctx, conn, settings, `EXPLAIN`, stmt, args)
}

// explainGeneric is genericPlan with the EXPLAIN command given: with
// ANALYZE, stmt runs, in the transaction, which is rolled back.
func explainGeneric(ctx context.Context, conn *pgx.Conn, settings, explain, stmt, args string) (string, error) {
	// Deferred first, run last: after the rollback, in a transaction no
	// failure has aborted.
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE idempotency_generic_plan`) //nolint:errcheck // best effort
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing is kept
	return explainPrepared(ctx, tx, settings, explain, stmt, args)
}

// explainPrepared runs settings in tx, prepares stmt there (as
// idempotency_generic_plan, which the caller deallocates once tx is over)
// and returns what explain says of its execution with args.
func explainPrepared(ctx context.Context, tx pgx.Tx, settings, explain, stmt, args string) (string, error) {
	if _, err := tx.Exec(ctx, settings); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `PREPARE idempotency_generic_plan AS `+stmt); err != nil {
		return "", err
	}
	rows, err := tx.Query(ctx, explain+` EXECUTE idempotency_generic_plan(`+args+`)`)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// PgxStatsPlan is EXPLAIN ANALYZE of Stats' statement on conn, in Stats'
// transaction (inStatsTx); with generic, planned generically, as a
// connection's cached statement may be after five runs.
func PgxStatsPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, generic bool) (string, error) {
	settings := `SELECT`
	if generic {
		settings = genericPlanSetting
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE idempotency_generic_plan`) //nolint:errcheck // best effort, after the transaction
	var plan string
	err := inStatsTx(ctx, conn, func(tx pgx.Tx) error {
		var err error
		plan, err = explainPrepared(ctx, tx, settings, `EXPLAIN ANALYZE`, s.inbox.stats, strconv.Itoa(s.statsExactLimit+1))
		return err
	})
	return plan, err
}

// PgxStatsEveryRow runs the statement Stats ran before migration 013,
// which counted every row of the inbox, and returns the rows it counted:
// BenchmarkPgxInboxStats's baseline.
func PgxStatsEveryRow(ctx context.Context, s *PgxStore, db *pgxpool.Pool) (int, error) {
	rows, err := db.Query(ctx, `SELECT kind, state, count(*), min(received_at) FILTER (WHERE state IN ('pending', 'failed', 'processing')),
    max(attempted_at)
FROM `+pgx.Identifier{s.cfg.Schema}.Sanitize()+`.idempotency_inbox GROUP BY kind, state`)
	if err != nil {
		return 0, err
	}
	var kind, state string
	var n, total int
	var oldest, attempted pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&kind, &state, &n, &oldest, &attempted}, func() error {
		total += n
		return nil
	})
	return total, err
}

// SetPgxStatsExactLimit sets how many rows of a kind in a final state
// Stats counts before it estimates.
func SetPgxStatsExactLimit(s *PgxStore, n int) { s.statsExactLimit = n }

// PgxPruneClaimsPlan is the plan PostgreSQL makes for Prune's statement
// deleting a batch of claims on conn, generic, from the statistics of
// the moment.
func PgxPruneClaimsPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn) (string, error) {
	return genericPlan(ctx, conn, genericPlanSetting, s.retention.prune.eventIDs, `now() - interval '45 days', 1000`)
}

// PgxPruneTaskArgsPlan is what EXPLAIN (ANALYZE, BUFFERS) says on conn of
// Prune's statement clearing the arguments of a batch of n tasks finished
// before before, generic, run in a transaction rolled back.
func PgxPruneTaskArgsPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, before time.Time, n int) (string, error) {
	return explainGeneric(ctx, conn, genericPlanSetting, `EXPLAIN (ANALYZE, BUFFERS)`, s.retention.prune.taskArgs,
		fmt.Sprintf(`'%s'::timestamptz, %d`, before.UTC().Format(time.RFC3339Nano), n))
}

// PgxPruneInboxPlan is what EXPLAIN (ANALYZE, BUFFERS) says on conn of
// Prune's statement deleting a batch of n finished inbox rows of step
// ("events", "tasks", "dead letters" or "dead tasks") finished before
// before, generic, run in a transaction rolled back.
func PgxPruneInboxPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, step string, before time.Time, n int) (string, error) {
	stmt, ok := map[string]string{
		"events": s.retention.prune.events, "tasks": s.retention.prune.tasks,
		"dead letters": s.retention.prune.deadLetters, "dead tasks": s.retention.prune.deadTasks,
	}[step]
	if !ok {
		return "", fmt.Errorf("no prune step %q", step)
	}
	return explainGeneric(ctx, conn, genericPlanSetting, `EXPLAIN (ANALYZE, BUFFERS)`, stmt,
		fmt.Sprintf(`'%s'::timestamptz, %d`, before.UTC().Format(time.RFC3339Nano), n))
}

// PgxDryRunClaimsPlan is what EXPLAIN (ANALYZE, BUFFERS) says of a dry
// run's count of the claims older than before, in the transaction a dry
// run reads in (inDryRunTx), with every plan priced past the thresholds
// of JIT compilation (jit_above_cost and the others 0).
func PgxDryRunClaimsPlan(ctx context.Context, s *PgxStore, before time.Time) (string, error) {
	var plan string
	err := s.inDryRunTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('jit_above_cost', '0', true), set_config('jit_inline_above_cost', '0', true),
    set_config('jit_optimize_above_cost', '0', true)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+s.retention.count.eventIDs, before)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan = strings.Join(lines, "\n")
		return err
	})
	return plan, err
}

// PgxFenceUpdatePlans are the plans PostgreSQL makes on conn for the two
// statements that end an attempt on its inbox row, fenced on the attempt:
// the finish in the event's transaction, and the settle of a failed
// attempt. Generic, from the statistics of the moment.
func PgxFenceUpdatePlans(ctx context.Context, s *PgxStore, conn *pgx.Conn) (finish, settle string, err error) {
	finish, err = genericPlan(ctx, conn, genericPlanSetting, s.inbox.finish, `'evt_plan', 1, 'processed', now(), now(), now()`)
	if err != nil {
		return "", "", err
	}
	settle, err = genericPlan(ctx, conn, genericPlanSetting, s.inbox.settle,
		`'evt_plan', 1, 'failed', 'boom', now(), NULL, now(), NULL, false`)
	return finish, settle, err
}

// PgxOldestAwaitingPlan runs Prune's query of the oldest event still
// awaiting in the inbox on conn under EXPLAIN (ANALYZE, BUFFERS), and
// returns the plan and what the query answers.
func PgxOldestAwaitingPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn) (string, time.Time, error) {
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+s.retention.oldestAwaiting)
	if err != nil {
		return "", time.Time{}, err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", time.Time{}, err
	}
	var oldest pgtype.Timestamptz
	err = conn.QueryRow(ctx, s.retention.oldestAwaiting).Scan(&oldest)
	return strings.Join(lines, "\n"), oldest.Time, err
}

// RecoveryCheckpoint returns the last event of s's recovery checkpoint
// name, as a later Recover of it would load it, and whether s holds it.
func RecoveryCheckpoint(ctx context.Context, s Store, name string) (string, bool, error) {
	return recoveryCheckpointField(ctx, s, name, func(cp recoveryCheckpoint) string { return cp.LastEventID })
}

// RecoveryCheckpointAccount returns the Account of s's recovery checkpoint
// name, as a later Recover of it would load it, and whether s holds it.
func RecoveryCheckpointAccount(ctx context.Context, s Store, name string) (string, bool, error) {
	return recoveryCheckpointField(ctx, s, name, func(cp recoveryCheckpoint) string { return cp.Account })
}

// RecoveryCheckpointUpdatedAt returns when s's recovery checkpoint name
// last moved (its updated_at on PostgreSQL), and whether s holds it.
func RecoveryCheckpointUpdatedAt(ctx context.Context, s Store, name string) (time.Time, bool, error) {
	return recoveryCheckpointField(ctx, s, name, func(cp recoveryCheckpoint) time.Time { return cp.UpdatedAt })
}

// recoveryCheckpointField returns field of s's recovery checkpoint name,
// as a later Recover of it would load it, and whether s holds it.
func recoveryCheckpointField[T any](ctx context.Context, s Store, name string, field func(recoveryCheckpoint) T) (T, bool, error) {
	cp, found, err := s.(recoveryBackend).loadCheckpoint(ctx, name)
	return field(cp), found, err
}

// PgxMigrateTo applies the embedded migrations up to version last that
// s's schema has not applied yet, in one transaction, as Migrate applies
// them all: the schema a release that shipped up to last would leave.
func PgxMigrateTo(ctx context.Context, s *PgxStore, last int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var upTo []migration
	for _, m := range ms {
		if m.version <= last {
			upTo = append(upTo, m)
		}
	}
	return s.migrateOnce(ctx, upTo)
}

// SetPgxLostCommitWait sets how long s looks up a transaction whose
// COMMIT answer was lost while it is still in progress (5 seconds).
func SetPgxLostCommitWait(s *PgxStore, d time.Duration) { s.lostCommitWait = d }

// SetListenWait sets how long after its check's NOTIFY Run's listen
// connection must have heard a notification; call it before Run.
func SetListenWait(in *Inbox, d time.Duration) { in.listenWait = d }

// DeafListenStore is a MemoryStore whose inbox listens as a PgxStore does
// behind PgBouncer in transaction pooling mode: LISTEN succeeds, NOTIFY
// succeeds, and no notification ever arrives. Notified is sent to after
// each NOTIFY, when it has one waiting.
type DeafListenStore struct {
	*MemoryStore
	Notified chan struct{}
}

func (s DeafListenStore) inboxNotify(context.Context) error {
	select {
	case s.Notified <- struct{}{}:
	default:
	}
	return nil
}

func (DeafListenStore) inboxListen(ctx context.Context, listening, _ func()) error {
	listening()
	<-ctx.Done()
	return ctx.Err()
}

// PgxHeldByPlan is what EXPLAIN ANALYZE says of Inbox.HeldBy's statement
// for eventID at now on conn.
func PgxHeldByPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, eventID string, now time.Time) (string, error) {
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) `+s.inbox.heldBy, eventID, now, maxInboxHolders)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// SetInboxClockCheck makes Run compare now, as if it were the inbox's
// clock, with the store's (a skewed process clock in a test).
func SetInboxClockCheck(in *Inbox, now func() time.Time) { in.clock.now = now }

// CheckInboxClock compares the inbox's clock with its store's once, as Run
// does when it starts and every minute after.
func CheckInboxClock(ctx context.Context, in *Inbox) { in.clock.check(ctx, in) }

// MemoryInboxRecords is every record in s's inbox, from a scan of every
// row.
func MemoryInboxRecords(s *MemoryStore) []InboxRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InboxRecord
	for _, r := range s.inbox {
		out = append(out, r.InboxRecord)
	}
	return out
}

// MemoryOldestAwaiting is what s's Prune keeps the claims of awaiting
// events from (see MemoryStore.oldestAwaiting).
func MemoryOldestAwaiting(s *MemoryStore) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oldestAwaiting()
}

// MemoryInboxIndexErr reports where s's indexes of inbox rows (the
// unfinished ones, every one by kind and state, the finished ones by
// when they finished, the tasks whose arguments are to clear, the
// attempted ones by when they were) differ from a scan of every row, or
// nil when they are in step.
func MemoryInboxIndexErr(s *MemoryStore) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad []string
	for id, r := range s.inbox {
		if in := s.unfinished[id]; r.unfinished() != (in != nil) || (in != nil && in != r) {
			bad = append(bad, fmt.Sprintf("%q (%s, indexed %v)", id, r.State, in != nil))
		}
	}
	for id, r := range s.unfinished {
		if s.inbox[id] == nil {
			bad = append(bad, fmt.Sprintf("%q (%s, indexed, not stored)", id, r.State))
		}
	}
	// Every row in the order of its kind and state, once, and nothing else.
	filed := 0
	for k, o := range s.inboxByState {
		filed += checkInboxOrder(s, o, string(k.kind)+"/"+string(k.state), &bad, func(r *memoryInboxRow) bool {
			return r.Kind == k.kind && r.State == k.state && r.filedAs == k.state
		})
	}
	if filed != len(s.inbox) {
		bad = append(bad, fmt.Sprintf("%d rows filed by state, %d stored", filed, len(s.inbox)))
	}
	// The finished tasks whose arguments are to clear, each once under
	// its FinishedAt, in order, and nothing else; and every finished row
	// (final state, FinishedAt set) once under its FinishedAt in the
	// order of its kind and state, and nothing else.
	toClear, finished := 0, 0
	for _, r := range s.inbox {
		if r.argsToClear(r.State) {
			toClear++
		}
		if r.State.Final() && !r.FinishedAt.IsZero() {
			finished++
		}
	}
	n := checkInboxOrder(s, &s.taskArgs, "the arguments to clear", &bad, func(r *memoryInboxRow) bool {
		return r.argsToClear(r.State) && r.argsFiledAt.Equal(r.FinishedAt)
	})
	if n != toClear {
		bad = append(bad, fmt.Sprintf("%d tasks' arguments to clear, %d filed", toClear, n))
	}
	n = 0
	for k, o := range s.inboxFinished {
		n += checkInboxOrder(s, o, "finished "+string(k.kind)+"/"+string(k.state), &bad, func(r *memoryInboxRow) bool {
			return r.Kind == k.kind && r.State == k.state && r.filedAs == k.state && r.State.Final() &&
				!r.FinishedAt.IsZero() && r.finishedFiledAt.Equal(r.FinishedAt)
		})
	}
	if n != finished {
		bad = append(bad, fmt.Sprintf("%d finished rows, %d filed by when they finished", finished, n))
	}
	// Every row that was attempted, once under its AttemptedAt, in order,
	// and nothing else: Stats' LastAttempt is its last.
	attempted := 0
	for _, r := range s.inbox {
		if !r.AttemptedAt.IsZero() {
			attempted++
		}
	}
	n = checkInboxOrder(s, &s.inboxAttempted, "the attempted rows", &bad, func(r *memoryInboxRow) bool {
		return !r.AttemptedAt.IsZero() && r.attemptedFiledAt.Equal(r.AttemptedAt)
	})
	if n != attempted {
		bad = append(bad, fmt.Sprintf("%d rows attempted, %d filed by when they were", attempted, n))
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("inbox indexes out of step: %s", strings.Join(bad, ", "))
	}
	return nil
}

// checkInboxOrder appends to bad where o, named name, is out of step with
// s: a block empty or over inboxOrderBlock, a row s does not hold or that
// fits not (fits says which do), two rows out of order, its count of rows
// wrong. It returns how many rows o holds.
func checkInboxOrder(s *MemoryStore, o *inboxOrder, name string, bad *[]string, fits func(*memoryInboxRow) bool) int {
	n := 0
	var prev *memoryInboxRow
	for i, rows := range o.blocks {
		if len(rows) == 0 || len(rows) > inboxOrderBlock {
			*bad = append(*bad, fmt.Sprintf("%s block %d holds %d rows", name, i, len(rows)))
		}
		for _, r := range rows {
			n++
			if s.inbox[r.EventID] != r || !fits(r) {
				*bad = append(*bad, fmt.Sprintf("%q (%s %s, %d bytes of payload, finished %v, attempted %v, filed as %s, under %v, %v and %v) in %s",
					r.EventID, r.Kind, r.State, len(r.Payload), r.FinishedAt, r.AttemptedAt, r.filedAs, r.argsFiledAt, r.finishedFiledAt, r.attemptedFiledAt, name))
			}
			if prev != nil && comparePosition(o.position(prev), o.position(r)) >= 0 {
				*bad = append(*bad, fmt.Sprintf("%q after %q in %s", r.EventID, prev.EventID, name))
			}
			prev = r
		}
	}
	if n != o.n {
		*bad = append(*bad, fmt.Sprintf("%s counts %d rows, holds %d", name, o.n, n))
	}
	return n
}

// PgxPruneBatchPlans is what EXPLAIN (FORMAT JSON) says of each statement
// that deletes one batch of Prune, by the table it deletes from.
func PgxPruneBatchPlans(ctx context.Context, s *PgxStore, conn *pgx.Conn) (map[string]string, error) {
	r := s.retention.prune
	at, n, from := time.Now(), 10, ""
	stmts := map[string]struct {
		sql  string
		args []any
	}{
		"event ids":    {r.eventIDs, []any{at, n}},
		"events":       {r.events, []any{at, n}},
		"tasks":        {r.tasks, []any{at, n}},
		"dead letters": {r.deadLetters, []any{at, n}},
		"dead tasks":   {r.deadTasks, []any{at, n}},
		"task args":    {r.taskArgs, []any{at, n}},
		"guards":       {r.guards, []any{at, n, from, from}},
		"objects":      {r.objects, []any{at, n, from, from}},
		"order":        {r.order, []any{at, n, from, from}},
	}
	plans := make(map[string]string, len(stmts))
	for name, st := range stmts {
		var plan string
		if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON, COSTS OFF) `+st.sql, st.args...).Scan(&plan); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		plans[name] = plan
	}
	return plans, nil
}

// MemoryRecordIgnored stores an event in s's inbox as an inbox's Handler
// records one of a type no handler is registered for (RecordIgnored),
// received at at, without the request, the signature and the parsing
// that come before: for tests that need many finished rows.
func MemoryRecordIgnored(ctx context.Context, s *MemoryStore, id, eventType, objectID string, payload []byte, at time.Time) error {
	inserted, err := s.inboxEnqueue(ctx, &inboxRow{InboxRecord: InboxRecord{
		Kind: KindEvent, EventID: id, EventType: eventType, ObjectID: objectID, Created: at,
		State: InboxIgnored, ReceivedAt: at, FinishedAt: at,
	}, Payload: payload})
	if err == nil && !inserted {
		err = fmt.Errorf("event %s is stored already", id)
	}
	return err
}

// RecoverWithBackoff is h.Recover, waiting backoff (not a second) before
// the first request it asks again after a 429, a 5xx or the network.
func RecoverWithBackoff(ctx context.Context, h *Handler, client *stripe.Client, opts RecoverOptions, backoff time.Duration) (RecoverReport, error) {
	return h.runRecovery(ctx, client, opts, backoff)
}

// SetPgxConflictWait makes wait stand in for s's pause before it runs a
// transaction again after a conflict: it is given the attempt that
// failed, and s gives up, returning that attempt's error, when it
// returns false.
func SetPgxConflictWait(s *PgxStore, wait func(ctx context.Context, attempt int) bool) {
	s.conflictWait = wait
}

// InboxSignals returns how many times in's workers were woken (signal).
func InboxSignals(in *Inbox) uint64 { return in.signals.Load() }

// LostAnswerStore is a MemoryStore whose inbox insert, while Lose is set,
// stores the event and fails as one whose answer was lost after it
// committed (a connection cut, the insert's timeout).
type LostAnswerStore struct {
	*MemoryStore
	Lose atomic.Bool
}

func (s *LostAnswerStore) inboxEnqueue(ctx context.Context, r *inboxRow) (bool, error) {
	inserted, err := s.MemoryStore.inboxEnqueue(ctx, r)
	if err == nil && s.Lose.Load() {
		return false, fmt.Errorf("%w: the insert's answer was lost", ErrStoreUnavailable)
	}
	return inserted, err
}

// PgxListPlan is what EXPLAIN (ANALYZE, BUFFERS) says on conn of
// Inbox.List's statement for f (its Limit given), planned for f's values
// as a connection's first runs of it are.
func PgxListPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, f InboxFilter) (string, error) {
	return explainAnalyze(ctx, conn, s.inbox.list, inboxListArgs(f))
}

// PgxListEventsPlan is PgxListPlan for ListEvents' statement.
func PgxListEventsPlan(ctx context.Context, s *PgxStore, conn *pgx.Conn, f EventFilter) (string, error) {
	return explainAnalyze(ctx, conn, s.sql.listEvents, listEventsArgs(f))
}

// explainAnalyze is what EXPLAIN (ANALYZE, BUFFERS) says on conn of stmt
// run with args.
func explainAnalyze(ctx context.Context, conn *pgx.Conn, stmt string, args []any) (string, error) {
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+stmt, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// EventObjects returns the Stripe objects On accepts a stripe-go type of
// for eventType's handler; none when it checks none.
func EventObjects(eventType string) []string { return eventtypes.Objects(eventType) }
