package idempotency

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/display"
)

// Retention says how long a store keeps what it stored, for
// [PgxStore.Prune] and [MemoryStore.Prune]. The zero value is the
// defaults. Every window is measured back from Now; what is older is
// deleted.
//
// The windows follow from what each row is for:
//
//   - A claimed event id is what answers a redelivery duplicate. Stripe
//     retries for three days, and [Handler.Recover] lists events up to
//     [RecoveryWindow] (30 days) back, so an id deleted sooner could be
//     applied a second time. EventIDs is at least 45 days, the 30 days
//     plus a margin for a recovery run and for clocks. A claim whose event
//     is in the inbox again, still to be applied or dead-lettered (a copy
//     stored after the first one's row was pruned), is kept however old:
//     it is what answers that copy duplicate.
//   - A finished inbox event (processed, skipped or ignored) keeps its
//     payload for an operator to look at. It is not what stops a
//     redelivery (its claim is), so it may go sooner: after a week by
//     default. A redelivery after that is stored again, and its claim
//     answers it duplicate when a worker takes it.
//   - A finished task (processed or skipped) keeps its arguments as long:
//     they may hold personal data, and nothing runs the task again. Its
//     row stays (see the last rule), without them: [Inbox.Payload]
//     reports them not stored, and a finished task cannot be redriven.
//   - A dead letter waits for an operator to fix the cause and redrive
//     it: 90 days by default, and never less than the finished events'.
//   - An object's row of [OnCurrent] (its lock, and the number of its
//     last fetch, which spares an event covered by a later fetch its own)
//     goes when the object was not fetched for as long as the event ids
//     are kept: an event that comes after that fetches the object again,
//     which is always right.
//   - A guard ([Tx.Guard], [CheckOrder]'s keys) and a finished task (the
//     record that its key was enqueued) stop a different event from doing
//     the same thing again, so they are kept unless a window at least as
//     long as EventIDs and DeadLetters together is set: a different event
//     about the same key may come up to EventIDs after the key was written
//     (Stripe's retries, a recovery), fail until it is dead-lettered, and
//     wait DeadLetters for a redrive, and it must still find the key taken.
//     Its attempts before it is dead-lettered (6.5 days with the inbox's
//     defaults) are in no window: whatever the windows, a guard, a
//     CheckOrder key or a task written less than EventIDs before the
//     oldest event still to be applied or dead-lettered in the inbox was
//     received is kept while that event is there.
//     A dead-lettered task is its key's record too: it is kept for that
//     window (or Tasks, when longer) after it was dead-lettered, even
//     when DeadLetters is shorter.
//
// Settings that break one of these rules are refused with an error naming
// the rule, and nothing is deleted.
type Retention struct {
	// EventIDs is how long claimed event ids are kept in the ledger.
	// Defaults to DefaultEventIDRetention (45 days), which is also the
	// least accepted. The claim of an event that is in the inbox still to
	// be applied, or dead-lettered, is kept until it left that state.
	EventIDs time.Duration
	// Payloads is how long finished inbox events (processed, skipped,
	// ignored), with their payloads, are kept after they finished, and
	// how long finished tasks (processed, skipped) keep their arguments;
	// a dead-lettered task keeps them while it is kept. Defaults to
	// DefaultPayloadRetention (7 days); negative is refused.
	Payloads time.Duration
	// DeadLetters is how long dead-lettered events are kept after they
	// were dead-lettered. Defaults to DefaultDeadLetterRetention (90 days);
	// it may not be shorter than Payloads. A dead-lettered task, the record
	// of its key, is kept EventIDs plus DeadLetters (or Tasks, when set
	// and longer) after it was dead-lettered.
	DeadLetters time.Duration
	// Guards is how long natural-key guards are kept after they were
	// claimed, and CheckOrder's keys after the created time of the newest
	// event recorded for them. Zero keeps them; otherwise it may not be
	// shorter than EventIDs plus DeadLetters (135 days with the defaults).
	// Those an event awaiting in the inbox may find are kept longer (see
	// above).
	Guards time.Duration
	// Tasks is how long finished tasks (processed, skipped) are kept after
	// they finished: while a task's row is there, enqueueing its key again
	// does nothing. Zero keeps them; otherwise it may not be shorter than
	// EventIDs plus DeadLetters; kept longer as guards are. Their
	// arguments go after Payloads.
	Tasks time.Duration

	// BatchSize is how many rows one transaction deletes, so that a prune
	// never holds many rows locked at once nor blocks deliveries for long.
	// Defaults to DefaultPruneBatch (1000); at most MaxPruneBatch.
	BatchSize int
	// Pause is how long a prune waits after each batch, so that it takes
	// a small share of the database from the deliveries running meanwhile.
	// Defaults to DefaultPrunePause (50ms): with the default BatchSize, at
	// most 20,000 rows a second, about an hour's worth of a busy service's
	// events in a minute. Negative does not pause: for a one-off prune at
	// a quiet time.
	Pause time.Duration
	// Now is the clock the windows are measured on. Defaults to time.Now.
	// A time outside the years 1 to 9999 (a fake clock set wrong) is
	// refused with [ErrInvalidKey], naming it, and nothing is deleted;
	// Validate reports it too, and PruneEvery tries again at its next
	// tick. The rows are dated on more than one clock: an inbox's events
	// and tasks on InboxConfig.Now (a synchronous Handler's tasks are
	// enqueued on Config.Now), claims and guards on the store's own
	// (EventRecord.ProcessedAt, GuardRecord.ClaimedAt: PostgreSQL's, or
	// the memory store's time.Now). A test that prunes on the inbox's fake
	// clock ages the inbox's rows by it, and the claims and guards from
	// their real times.
	Now func() time.Time
	// OnBatch, when set, is called after each committed batch with the
	// totals so far: the place for a progress bar. A dry run commits no
	// batch and does not call it.
	OnBatch func(PruneReport)
	// DryRun counts what Prune would delete and clear, and changes
	// nothing: the report is the one a prune run at the same moment, on
	// the same rows, would return, for an operator to see what a first
	// prune, or a shorter window, would take before it does. It counts
	// each kind of row in one go, not in batches: BatchSize (still
	// checked) and Pause are not used, and OnBatch is not called. It
	// counts the rows a transaction in flight holds too, which a prune
	// passes over until that transaction ends.
	// [PgxStore.Prune] counts in one read-only snapshot, locks no row and
	// does not take the prune lock, so a dry run runs beside another
	// replica's prune; that snapshot lasts as long as the counts (vacuum
	// keeps the row versions it could remove meanwhile, and a hot
	// standby may cancel it for a replication conflict). [PruneEvery]
	// refuses it.
	DryRun bool
}

// The defaults and bounds of Retention.
const (
	DefaultEventIDRetention    = 45 * 24 * time.Hour
	DefaultPayloadRetention    = 7 * 24 * time.Hour
	DefaultDeadLetterRetention = 90 * 24 * time.Hour
	DefaultPruneBatch          = 1000
	DefaultPrunePause          = 50 * time.Millisecond
	MaxPruneBatch              = 100000
)

// Validate reports the first rule r breaks, in the words Prune refuses it
// with, or nil when Prune accepts r: to check a configuration before a
// prune runs. It reads the clock, r.Now, once: a time outside the years 1
// to 9999 fails every prune while the clock shows it.
func (r Retention) Validate() error {
	if err := r.check(); err != nil {
		return err
	}
	return checkStoredTime("Retention.Now", r.Now())
}

// check validates r, naming the rule a setting breaks, and applies the
// defaults.
func (r *Retention) check() error {
	if r.EventIDs == 0 {
		r.EventIDs = DefaultEventIDRetention
	}
	if r.Payloads == 0 {
		r.Payloads = DefaultPayloadRetention
	}
	if r.DeadLetters == 0 {
		r.DeadLetters = DefaultDeadLetterRetention
	}
	if r.BatchSize == 0 {
		r.BatchSize = DefaultPruneBatch
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Pause == 0 {
		r.Pause = DefaultPrunePause
	}
	keys := r.keysWindow()
	switch {
	case r.EventIDs < DefaultEventIDRetention:
		return errorf("Retention.EventIDs %s: claimed event ids are kept at least %s, longer than recovery from the Events API reaches back (%s), so that no event is applied twice",
			window(r.EventIDs), window(DefaultEventIDRetention), window(RecoveryWindow))
	case r.Payloads < 0:
		return errorf("Retention.Payloads %v is negative", r.Payloads)
	case r.DeadLetters < r.Payloads:
		return errorf("Retention.DeadLetters %s: dead letters are kept at least as long as finished events (Payloads, %s), so that they can be redriven", window(r.DeadLetters), window(r.Payloads))
	case r.Guards != 0 && r.Guards < keys:
		return errorf("Retention.Guards %s: natural-key guards are kept (0) or kept at least as long as the event ids and the dead letters together (EventIDs %s + DeadLetters %s), so that an event still answered duplicate, or a dead letter redriven, cannot find its keys free", window(r.Guards), window(r.EventIDs), window(r.DeadLetters))
	case r.Tasks != 0 && r.Tasks < keys:
		return errorf("Retention.Tasks %s: finished tasks are kept (0) or kept at least as long as the event ids and the dead letters together (EventIDs %s + DeadLetters %s), so that a task key is not enqueued twice by an event still answered duplicate or a dead letter redriven", window(r.Tasks), window(r.EventIDs), window(r.DeadLetters))
	case r.BatchSize < 1 || r.BatchSize > MaxPruneBatch:
		return errorf("Retention.BatchSize %d is not between 1 and %d", r.BatchSize, MaxPruneBatch)
	}
	return nil
}

// window writes a retention window for a refusal: in days when it is a
// whole number of them, as windows are thought of (and as idemctl's flags
// take them), else as a Go duration.
func window(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return display.Count(int(d/day), "day", "days")
	}
	return d.String()
}

// keysWindow is the least window of guards and task keys: EventIDs plus
// DeadLetters, or the longest duration when they add up past its range.
func (r *Retention) keysWindow() time.Duration {
	keys := r.EventIDs + r.DeadLetters
	if keys < r.EventIDs {
		keys = math.MaxInt64 // windows that add up past time.Duration's range
	}
	return keys
}

// pruneCutoffs are the times before which each kind of row is deleted; a
// zero time deletes none.
type pruneCutoffs struct {
	eventIDs, payloads, deadLetters, deadTasks, guards, tasks time.Time
}

// cutoffs refuses a clock outside the years 1 to 9999, as the inbox's is
// refused: PostgreSQL cannot hold a cutoff past the year 294276, pgx sends
// one past about the year 294000 as a time of another century, and
// MemoryStore would compare with it and delete everything.
func (r *Retention) cutoffs() (pruneCutoffs, error) {
	now := r.Now()
	if err := checkStoredTime("Retention.Now", now); err != nil {
		return pruneCutoffs{}, errorf("prune: %w", err)
	}
	// A dead-lettered task is its key's record, as a finished one is: it
	// is kept the keys' window (Tasks when longer), which outlasts the
	// dead letters'.
	deadTasks := max(r.keysWindow(), r.Tasks)
	c := pruneCutoffs{
		eventIDs:    now.Add(-r.EventIDs),
		payloads:    now.Add(-r.Payloads),
		deadLetters: now.Add(-r.DeadLetters),
		deadTasks:   now.Add(-deadTasks),
	}
	if r.Guards > 0 {
		c.guards = now.Add(-r.Guards)
	}
	if r.Tasks > 0 {
		c.tasks = now.Add(-r.Tasks)
	}
	return c, nil
}

// keepKeysOf moves the cutoffs of guards, CheckOrder's keys and tasks back
// so that they keep every key an event still awaiting in the inbox may
// find: one written less than eventIDs before oldest, when the oldest of
// those events (still to be applied, or dead-lettered) was received. Their
// windows count from the key, the dead letters' from when the event was
// dead-lettered: the attempts between (6.5 days with the inbox's
// defaults, any time with its settings) are in neither.
func (c *pruneCutoffs) keepKeysOf(oldest time.Time, eventIDs time.Duration) {
	if oldest.IsZero() {
		return
	}
	bound := oldest.Add(-eventIDs)
	for _, t := range []*time.Time{&c.guards, &c.tasks, &c.deadTasks} {
		if !t.IsZero() && bound.Before(*t) {
			*t = bound
		}
	}
}

// PruneReport counts the rows a prune deleted, and the finished tasks
// whose arguments it cleared; a dry run's (Retention.DryRun), those it
// would delete and clear.
type PruneReport struct {
	EventIDs    int // claimed event ids (ledger rows)
	Events      int // finished inbox events, with their payloads
	DeadLetters int // dead-lettered events and tasks
	Guards      int // natural-key guards and CheckOrder keys
	Tasks       int // finished tasks
	Objects     int // OnCurrent's rows of objects not fetched within EventIDs
	// TaskArgsCleared counts the finished tasks whose arguments were
	// cleared, their rows kept; not in Total.
	TaskArgsCleared int
}

// Total is the number of rows deleted.
func (r PruneReport) Total() int {
	return r.EventIDs + r.Events + r.DeadLetters + r.Guards + r.Tasks + r.Objects
}

// Pruner deletes what a [Retention] no longer keeps: [PgxStore] and
// [MemoryStore].
type Pruner interface {
	Prune(ctx context.Context, r Retention) (PruneReport, error)
}

// PruneEvery prunes p with r at once and then every interval, until ctx is
// done, and returns ctx's error. A failed prune is logged at Warn and
// tried again at the next tick; a prune that finds another one running
// ([ErrPruneRunning], another replica) leaves the work to it. Run it on
// every replica: with a [PgxStore], one batch at a time is deleted across
// all of them. A nil logger logs to slog.Default().
//
// It refuses a nil p, an interval under a minute, a Retention that breaks
// a rule and one with DryRun set (it would delete nothing, ever), before
// pruning anything: it logs the refusal at Error, as it is usually
// started with go and what it returns is dropped, and returns it.
func PruneEvery(ctx context.Context, p Pruner, r Retention, interval time.Duration, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	err := r.check()
	if r.DryRun {
		err = errorf("PruneEvery: Retention.DryRun is set: a dry run deletes nothing; call Prune with it instead")
	}
	if interval < time.Minute {
		err = errorf("PruneEvery: interval %v is under a minute", interval)
	}
	if isNil(p) {
		err = errorf("PruneEvery: nil Pruner (a nil %T)", p)
	}
	if err != nil {
		logger.ErrorContext(ctx, "idempotency: PruneEvery refused: nothing will be pruned", "err", err)
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		rep, err := p.Prune(ctx, r)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrPruneRunning):
			logger.DebugContext(ctx, "idempotency: prune left to another replica")
		case err != nil:
			logger.WarnContext(ctx, "idempotency: prune failed", "err", err, "deleted", rep.Total())
		case rep.Total() > 0 || rep.TaskArgsCleared > 0:
			logger.InfoContext(ctx, "idempotency: pruned", "event_ids", rep.EventIDs, "events", rep.Events,
				"dead_letters", rep.DeadLetters, "guards", rep.Guards, "tasks", rep.Tasks, "objects", rep.Objects,
				"task_args_cleared", rep.TaskArgsCleared)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// pruneStep is one kind of row a prune deletes, batch by batch: del
// deletes at most n of them and reports how many.
type pruneStep struct {
	count *int
	del   func(ctx context.Context, n int) (int, error)
}

// pruneDeleter deletes one batch, at most n rows of one kind older than
// cutoff, and reports how many it deleted.
type pruneDeleter func(ctx context.Context, n int, cutoff time.Time) (int, error)

// pruneDeleters are a store's deleters, one per kind of row, and taskArgs,
// which clears the arguments of finished tasks (processed, skipped) that
// still have them, keeping their rows, and reports how many. In a dry run
// (Retention.DryRun) each one counts the rows it would delete or clear
// older than cutoff, on the same condition, changing nothing, and n is
// math.MaxInt.
type pruneDeleters struct {
	eventIDs, events, deadLetters, deadTasks, objects, tasks, guards, order pruneDeleter
	taskArgs                                                                pruneDeleter
}

// pruneSteps are a prune's steps in order: what every Retention deletes,
// then finished tasks when c keeps them for a time, the arguments of the
// finished tasks kept, and guards (with CheckOrder's keys) when c keeps
// them for a time. With dryRun, d counts (see pruneDeleters).
func pruneSteps(rep *PruneReport, c pruneCutoffs, d pruneDeleters, dryRun bool) []pruneStep {
	step := func(count *int, del pruneDeleter, cutoff time.Time) pruneStep {
		return pruneStep{count: count, del: func(ctx context.Context, n int) (int, error) { return del(ctx, n, cutoff) }}
	}
	steps := []pruneStep{
		step(&rep.EventIDs, d.eventIDs, c.eventIDs),
		step(&rep.Events, d.events, c.payloads),
		step(&rep.DeadLetters, d.deadLetters, c.deadLetters),
		step(&rep.DeadLetters, d.deadTasks, c.deadTasks),
		step(&rep.Objects, d.objects, c.eventIDs),
	}
	if !c.tasks.IsZero() {
		steps = append(steps, step(&rep.Tasks, d.tasks, c.tasks))
	}
	// A finished task's arguments go when a finished event's payload does.
	args := step(&rep.TaskArgsCleared, d.taskArgs, c.payloads)
	if dryRun && !c.tasks.IsZero() {
		// A prune's tasks step has deleted the finished tasks that
		// finished before c.tasks, and its taskArgs step does not find
		// them; a dry run's has deleted none, and leaves them out. They
		// are those the count finds before c.tasks, which is before
		// c.payloads: Tasks is at least EventIDs plus DeadLetters, longer
		// than Payloads, and keepKeysOf only moves c.tasks back.
		args.del = func(ctx context.Context, n int) (int, error) {
			all, err := d.taskArgs(ctx, n, c.payloads)
			if err != nil {
				return 0, err
			}
			deleted, err := d.taskArgs(ctx, n, c.tasks)
			return all - deleted, err
		}
	}
	steps = append(steps, args)
	if !c.guards.IsZero() {
		steps = append(steps, step(&rep.Guards, d.guards, c.guards), step(&rep.Guards, d.order, c.guards))
	}
	return steps
}

// runPrune runs steps in order, each until a batch deletes fewer than
// r.BatchSize rows, calling r.OnBatch after each batch that deleted
// something, and stops between batches when ctx is done. A dry run
// (r.DryRun) counts each step's rows in one go, and calls no OnBatch.
func runPrune(ctx context.Context, r *Retention, rep *PruneReport, steps []pruneStep) error {
	size := r.BatchSize
	if r.DryRun {
		size = math.MaxInt
	}
	for _, st := range steps {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := st.del(ctx, size)
			if err != nil {
				return err
			}
			*st.count += n
			if n > 0 && r.OnBatch != nil && !r.DryRun {
				r.OnBatch(*rep)
			}
			if n < size {
				break
			}
			if r.Pause > 0 && !pause(ctx, r.Pause) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// checkEventID refuses an event id no event can have (empty, a NUL byte,
// invalid UTF-8, too long): bad input, which Forget and the Inbox's
// Lookup, HeldBy and Payload report as such, as op's error, rather than
// as an event they do not know.
func checkEventID(op, eventID string) error {
	if err := checkKey("event id", eventID); err != nil {
		return errorf("%s: %w", op, err)
	}
	return nil
}
