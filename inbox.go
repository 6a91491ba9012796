package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// InboxConfig configures an [Inbox]. Every field has a default; [NewInbox]
// validates them and names the field at fault: a negative count or
// duration is refused, as is what a field's doc says.
type InboxConfig struct {
	// Workers is how many events one process applies at once. Defaults to 8;
	// at most 10,000. On a PgxStore each worker holds a connection of the
	// pool while it applies an event, and Run's LISTEN holds one more: size
	// the pool's MaxConns to Workers plus one, plus what the service's other
	// work takes (pgxpool's default is the larger of 4 and the CPUs), or the
	// workers beyond it wait for a connection: Run warns of that as it
	// starts.
	Workers int

	// IngestWorkers is how many of the Workers apply events and run tasks
	// while this process's Handler is receiving deliveries (any that
	// reached the store, duplicates included); the others wait, leaving
	// the process's CPU and the database to answering Stripe. A burst is
	// then acknowledged sooner and drained by all Workers as soon as it
	// ends: when no delivery has come for a quarter of a second, or when a
	// lease takes an event that has been due for longer than MaxIngestLag.
	// A lowered limit holds back at once the workers waiting for an event,
	// and the others as their attempts already begun end. A process that
	// serves no Handler of this Inbox always applies with all its Workers.
	// Both times are read on Now: with a fake clock that stands still, a
	// delivery holds the limit until the clock moves; a clock stepped
	// back past the last delivery holds it a quarter of a second from
	// when Run sees it, not for as long as the step.
	// Defaults to half the Workers, at least 1; set it to Workers to apply
	// with all of them always. More than Workers is refused.
	IngestWorkers int

	// MaxIngestLag bounds how long IngestWorkers holds events back: once
	// a lease takes an event that has been due for longer (checked at each
	// lease, from the time the event came due or its lost lease ended),
	// all Workers apply even while deliveries keep coming. Defaults to 10
	// seconds.
	MaxIngestLag time.Duration

	// MaxAttempts is how many attempts an event gets before it is
	// dead-lettered; a lease that expired (its process died, hung or lost
	// its connection) counts as one, also when Run had only leased it
	// ahead and no worker had started it. An event whose lease expired is
	// leased again alone, attempted once the attempts at the events leased
	// before it have ended (or one hangs: then half of Lease less Timeout
	// into its lease, so that it still runs within it), and Run leases
	// nothing else while its attempt runs, within its lease: an event that
	// kills every process that runs it costs the events leased with it one
	// attempt, the first time, not one per crash. Defaults to 20: with the
	// default backoff the last attempt comes 6.5 days after the first,
	// longer than Stripe's own 3 days of retries. An expired lease is not
	// backed off: the next attempt comes as soon as it expired, so an event
	// that kills its process every time is dead-lettered MaxAttempts leases
	// after its first attempt (a Lease each, plus up to PollInterval), about
	// 20 minutes with the defaults.
	MaxAttempts int

	// Backoff is the wait after failed attempt n (1, 2, ...) before the
	// next; a negative wait is none. Defaults to [DefaultBackoff], n⁴
	// seconds ±10%. One that panics is logged at error and waits
	// DefaultBackoff's time for that attempt.
	Backoff func(attempt int) time.Duration

	// RetryUnhandledFor is how long after an event was received a worker
	// whose process has no handler for its type retries it: the attempt
	// fails with [ErrNoHandler], and the event is due again after the
	// backoff (or dead-lettered at MaxAttempts), for a process that has the
	// handler. In a rolling deploy that adds a handler, a replica not yet
	// updated can take an event an updated one stored. After that time, the
	// event is recorded ignored, as one whose handler was removed on purpose
	// (a redrive of ignored events takes it back: RedriveFilter.States), its
	// LastError saying why in the failed attempts' words ("... (recorded
	// ignored: not applied within RetryUnhandledFor, 1h0m0s, after it was
	// received)"), logged at Warn: a receiver with the handler stored it,
	// and no worker applied it. Meanwhile it holds the later events of its
	// object back, as any failed event does. Defaults to
	// [DefaultRetryUnhandledFor], an hour.
	RetryUnhandledFor time.Duration

	// Timeout bounds one attempt: the claim, the handler and the commit.
	// Defaults to 30 seconds. Lease must exceed it by a second at least: a
	// Timeout over 59 seconds needs Lease set too, or NewInbox refuses it.
	Timeout time.Duration

	// Lease is how long a worker holds an event before another may take it
	// over, as from a worker that died. It must exceed Timeout by a second
	// at least: Run's workers give back an event whose lease has less than
	// Timeout left when they take it, so the margin is what an event may
	// wait between its lease and its attempt. An attempt lasts up to
	// Timeout plus its rollback and the recording of its failure (5
	// seconds each at most), so leave that margin. On a PgxStore an
	// attempt's transaction holds its event past the lease while it is
	// open: one whose process died while a statement of its handler ran is
	// taken over once the server ends that statement and notices the
	// connection closed (PostgreSQL's client_connection_check_interval
	// has it check while a statement runs). Defaults to 1 minute, whatever
	// Timeout is: with a Timeout over 59 seconds, set it too.
	Lease time.Duration

	// PollInterval is how often workers look for due events when nothing
	// woke them: retries coming due, and events stored by another process
	// whose notification was missed. Defaults to 1 second; at least 10
	// milliseconds.
	PollInterval time.Duration

	// PollOnly turns off notifications between processes (PostgreSQL's
	// LISTEN/NOTIFY): behind PgBouncer in transaction pooling mode, LISTEN
	// does not work. Workers then find events stored by other processes by
	// polling; events stored through this process's Handler still wake its
	// workers at once. Defaults to false. Without it, Run checks each
	// connection it listens on once, with a NOTIFY of its own sent through
	// another connection: when no notification has arrived 10 seconds
	// after that NOTIFY, it warns once, at Warn, naming PollOnly and
	// PgBouncer's transaction pooling (a notification that arrives later is
	// logged at Info). The 10 seconds are fixed, and delay only the
	// warning: the workers poll every PollInterval from the start, whether
	// notifications arrive or not, so an event stored by another process,
	// while the check waits or after it warned, is applied at the next
	// poll, as with PollOnly.
	PollOnly bool

	// ShutdownTimeout is how long Run lets attempts in flight finish after
	// its context is done; then their contexts are cancelled and their
	// transactions roll back. Each such attempt is recorded failed, as a
	// timed-out one is: the event is retried after the backoff by the next
	// worker to run, or dead-lettered if that was its last attempt; Run
	// then returns an error wrapping ErrShutdownTimeout, which says how
	// many it cut. Defaults to Timeout, so that with the defaults only an
	// attempt that would soon have timed out is cut.
	ShutdownTimeout time.Duration

	// DisableFastDecoder decodes data.object with encoding/json alone, as
	// Config.DisableFastDecoder does for the synchronous Handler. Defaults
	// to false.
	DisableFastDecoder bool

	// Logger receives one record per attempt (event id, type, object id,
	// outcome, attempt, the state it left the event in, duration; never the
	// payload), written when the attempt returns, and the workers' troubles.
	// Processed and skipped attempts log at Info, as does a task's that
	// snoozed (outcome queued), failed ones at Error (and a processed one
	// whose AfterCommit func panicked), one that records an event ignored
	// (see RetryUnhandledFor) at Warn, with
	// why as ignored_reason, and one that found the event claimed by another
	// delivery (a synchronous Handler's) and applied nothing, outcome
	// duplicate, at Debug, as the Handler logs a duplicate delivery. An
	// attempt at an event whose lease expired (its worker died, hung or lost
	// its connection) is also logged as it starts, at Warn, after the line
	// of the attempt it takes over (failed, at Error): a process that dies
	// while it runs has that line last. The inbox's Handler logs its
	// deliveries to it too unless its Config sets another Logger. Defaults
	// to slog.Default().
	Logger *slog.Logger

	// OnResult, when set, is called once per attempt, on the worker's
	// goroutine, with Result.Attempt set: the place for metrics. It must
	// not block. It may query the store's pool: with it set, a worker's
	// commit does not also begin its next event's transaction, which would
	// hold a connection of that pool while OnResult runs. A panic in it is
	// logged, at Error, and the worker goes on.
	//
	// An attempt whose lease expired with its end not recorded (its worker
	// died, hung, or could not reach the database to record it) is reported
	// by the lease that finds it expired, failed with ErrLeaseExpired:
	// before the last attempt, by the attempt that takes the event over, as
	// it starts and before its own end (State failed); at the last, by the
	// lease that dead-letters it (State dead_letter). Its worker, if it
	// returns or gives up recording its end, only logs it: the row tells
	// whether a lease reported it or is to, whatever MaxAttempts each
	// process counts (a deploy that changes it makes no difference). When
	// the row no longer tells (the event redriven or forgotten since), a
	// worker back within its own lease reports it, as no lease can have
	// taken it over yet, and one back later leaves it to the lease (but for
	// one whose own failure, not recorded, has the very error the redriven
	// event's attempt of that number recorded before it was leased at the
	// next: taken for its own failure, recorded unanswered, it is reported
	// again). An attempt whose COMMIT, or the recording of its failure,
	// went through while its connection dropped before the answer (a
	// terminated session, a network cut, the attempt's timeout) is reported
	// as the store recorded it (processed, skipped, failed or dead_letter),
	// once; but when its worker cannot read the record either, it is taken
	// for one whose end was not recorded, left to a lease that never comes:
	// it is logged, not reported. So is an attempt whose lease expired when
	// the process that leased the event to take it over dies before that
	// attempt starts (Run may hold such an event back, leased, for up to
	// half of Lease less Timeout): the next lease reports the attempt that
	// process leased and never started, in its place, and the row counts
	// both. A lease that dead-letters an expired attempt reports it once it
	// knows it committed: when its COMMIT went through unanswered after the
	// answer of the statement that moved the event had arrived (a
	// PgxBeginner that only begins sends its COMMIT on its own), it looks
	// up whether it committed and reports the dead letter if it did; when
	// both went unanswered (on a pool they are answered together), it
	// cannot tell which events it moved: the dead letter is neither
	// reported nor logged, and shows in Inbox.Stats and Inbox.List, its
	// LastError saying the lease expired.
	OnResult func(Result)

	// Observer, when set, watches each attempt at an event or a task
	// (Observer.Attempt, given the link stored with it), gives the link
	// stored with each task a handler run by the workers enqueues
	// (Observer.Link), and watches the Stripe API fetches of OnCurrent
	// handlers run by the workers (Observer.Fetch). The inbox's Handler
	// watches its deliveries with it too (Observer.Delivery, Observer.Link)
	// unless its Config sets another (an empty &Observer{} watches nothing).
	// Defaults to nil: nothing is observed. The Inbox keeps the pointer,
	// not a copy: set the funcs before NewInbox and leave them, as
	// Config.Observer says.
	Observer *Observer

	// Now is the inbox's clock: what makes an event due, and the times it
	// records. Defaults to time.Now. Tests set a fake one and advance it to
	// reach a retry (see idempotencytest.Clock). A time outside the years
	// 1 to 9999 stores nothing: deliveries are answered 500 and leases fail
	// with ErrInvalidKey.
	//
	// Replicas on one database compare each other's times: keep their
	// clocks synchronized (NTP). Left unset, on a PgxStore, Run compares
	// it with the database's clock when it starts and every minute after
	// (one query, none per event), and logs at Warn, once, when they are
	// more than a second apart, and at Info when they agree again; a
	// clock set here is never compared.
	Now func() time.Time
}

// The defaults of InboxConfig.
const (
	DefaultWorkers      = 8
	DefaultMaxAttempts  = 20
	DefaultInboxTimeout = 30 * time.Second
	DefaultLease        = time.Minute
	DefaultPollInterval = time.Second
	DefaultMaxIngestLag = 10 * time.Second

	DefaultRetryUnhandledFor = time.Hour
)

// minLeaseMargin is how much longer than InboxConfig.Timeout its Lease
// must be at least: an event leased by Run waits for a worker before its
// attempt begins, and one whose lease has less than Timeout left by then
// is given back. With a margin shorter than that wait (microseconds for
// an idle worker), every event would be given back and leased again,
// forever.
const minLeaseMargin = time.Second

// maxInboxWorkers bounds InboxConfig.Workers: each applies on a
// connection of its own, and no database serves more at once.
const maxInboxWorkers = 10000

// minPollInterval is the shortest InboxConfig.PollInterval: each poll is a
// lease, a transaction on the store, and a shorter interval (PollInterval:
// 1, a nanosecond where a second was meant) would make Run lease in a loop.
const minPollInterval = 10 * time.Millisecond

// ingestQuiet is how long after the last delivery this process's Handler
// received Run applies with InboxConfig.IngestWorkers only.
const ingestQuiet = 250 * time.Millisecond

// DefaultBackoff is the wait after failed attempt n: n⁴ seconds, ±10% at
// random so that events that failed together do not retry together. It is
// River's schedule:
//
//	after attempt  1    2    3     4      5       10      15      19
//	wait           1s   16s  81s   4m16s  10m25s  2h47m   14h4m   1d12h
//
// The 20th attempt (InboxConfig.MaxAttempts's default) starts 6.5 days
// after the first. From about the 300th, the wait is the longest
// time.Duration, about 292 years.
func DefaultBackoff(attempt int) time.Duration {
	return nanoseconds(math.Pow(float64(attempt), 4) * float64(time.Second) * (0.9 + 0.2*rand.Float64()))
}

// nanoseconds converts ns (not negative) to a Duration, the longest one
// when ns is longer: converted, it would wrap to a negative one.
func nanoseconds(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// An Inbox applies verified events after answering Stripe: its [Handler]
// stores each event and answers 200 at once, and [Inbox.Run]'s workers
// apply it as the synchronous Handler would (claim, handler, guards and
// commit in one transaction), retrying failures with backoff, and
// dead-lettering what never succeeds. A slow or failing downstream then
// costs retries inside the service instead of Stripe's.
//
// Events of one object (data.object.id, under one account: Stripe reuses
// some ids, a capability's card_payments, in every connected account) are
// never applied at the same time, and the earliest by (created, event id)
// goes first. Events about no object, and tasks, are not ordered. A failed event
// holds the later events of its object back until it succeeds or is
// dead-lettered; a dead-lettered one holds nothing back, so a later event
// may then be applied before it is redriven.
//
// Several processes may run workers, and several may run Handlers, on one
// database: no event is applied twice.
//
// Make one with [NewInbox]: the zero Inbox is not usable, its methods
// fail naming NewInbox. Its methods are safe for concurrent use (List,
// Redrive or Stats while Run runs), but Run and WorkDue refuse to run
// together.
type Inbox struct {
	d     dispatcher // its tasks (d.tasks) are those its workers run
	store inboxBackend
	cfg   InboxConfig
	log   *slog.Logger
	obs   *handlerObserver // nil: no Observer.Fetch nor Link

	wake    chan struct{} // a due event may be waiting
	running atomic.Bool   // Run's mark, set before it looks at workingDue
	// started is set once Run passed its refusals, until it returns:
	// what Running reports, never a Run that is refused.
	started atomic.Bool
	// workingDue counts the calls of WorkDue under way: Run and WorkDue
	// refuse to run together, each setting its own mark before it looks
	// at the other's.
	workingDue atomic.Int32
	// For tests: how many times signal was called; while Run's loop waits
	// for a wake, a poll or its end, 1 + that count when the loop's last
	// pass began (0 while it works); and Run's workGate.
	signals atomic.Uint64
	idleAt  atomic.Uint64
	gate    atomic.Pointer[workGate]
	// storedAt is when this process's Handler last received a delivery
	// that reached the store (a duplicate too), in InboxConfig.Now's Unix
	// nanoseconds; 0 before the first.
	storedAt atomic.Int64

	unanswered unansweredInserts // the events whose insert failed, perhaps stored all the same
	notify     coalescer         // notifications to other processes
	listenWait time.Duration     // how long a listen check waits (the const listenWait); shorter in tests
	clock      clockCheck        // Run's comparison of the inbox's clock with the store's
}

// made fails when in is not an Inbox [NewInbox] returned (a zero or nil
// one, which has no store), naming method: the methods that return an
// error return it before they touch anything.
func (in *Inbox) made(method string) error {
	if in == nil || in.store == nil {
		return errorf("Inbox.%s: an Inbox not made by NewInbox", method)
	}
	return nil
}

// NewInbox returns the inbox of store, which applies the handlers
// registered in hs by now: it takes a snapshot of hs, after which [On],
// [OnCurrent] and [NewTask] refuse to register in hs.
// It fails when store does not support the inbox (both [MemoryStore] and
// [PgxStore] do), is nil or a PgxStore [NewPgxStore] did not make, or
// when cfg is invalid.
func NewInbox(store Store, hs *Handlers, cfg InboxConfig) (*Inbox, error) {
	if err := checkStore("NewInbox", store); err != nil {
		return nil, err
	}
	backend, ok := store.(inboxBackend)
	if !ok {
		return nil, errorf("NewInbox: %T does not support the inbox (MemoryStore and PgxStore do)", store)
	}
	if hs == nil {
		return nil, errorf("NewInbox: nil *Handlers")
	}
	realClock := cfg.Now == nil
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	hs.take("NewInbox")
	in := &Inbox{
		d:     newDispatcher(store, hs, !cfg.DisableFastDecoder, cfg.Timeout, "InboxConfig.Timeout"),
		store: backend,
		cfg:   cfg,
		log:   cfg.Logger,
		wake:  make(chan struct{}, 1),

		listenWait: listenWait,
	}
	if realClock {
		in.clock.now = cfg.Now
	}
	if in.log == nil {
		in.log = slog.Default()
	}
	in.obs = handlerObserverOf(cfg.Observer, in.log)
	hs.addInbox(in) // committed tasks wake its workers
	hs.warnUnknownTypes(in.log, "NewInbox")
	return in, nil
}

func (cfg *InboxConfig) setDefaults() error {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"Workers", &cfg.Workers, DefaultWorkers}, {"MaxAttempts", &cfg.MaxAttempts, DefaultMaxAttempts}} {
		switch {
		case *f.v < 0:
			return errorf("InboxConfig.%s is negative (%d)", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &cfg.Timeout, DefaultInboxTimeout},
		{"Lease", &cfg.Lease, DefaultLease},
		{"PollInterval", &cfg.PollInterval, DefaultPollInterval},
		{"MaxIngestLag", &cfg.MaxIngestLag, DefaultMaxIngestLag},
		{"RetryUnhandledFor", &cfg.RetryUnhandledFor, DefaultRetryUnhandledFor},
		{"ShutdownTimeout", &cfg.ShutdownTimeout, 0}, // defaults to Timeout, below
	} {
		if err := defaultDuration(f.v, f.def, "InboxConfig."+f.name); err != nil {
			return err
		}
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = cfg.Timeout
	}
	if cfg.Workers > maxInboxWorkers {
		// Run starts a goroutine per worker and a queue twice as long:
		// past an int's half, its make panics.
		return errorf("InboxConfig.Workers %d is over %d", cfg.Workers, maxInboxWorkers)
	}
	if cfg.PollInterval < minPollInterval {
		// PollInterval: 1 is a nanosecond: Run would lease in a loop.
		return errorf("InboxConfig.PollInterval (%s) is under %s: the workers would query the store in a loop (a unit left out? PollInterval: 1 is a nanosecond)", cfg.PollInterval, minPollInterval)
	}
	switch {
	case cfg.IngestWorkers < 0:
		return errorf("InboxConfig.IngestWorkers is negative (%d)", cfg.IngestWorkers)
	case cfg.IngestWorkers > cfg.Workers:
		return errorf("InboxConfig.IngestWorkers (%d) exceeds Workers (%d)", cfg.IngestWorkers, cfg.Workers)
	case cfg.IngestWorkers == 0:
		cfg.IngestWorkers = max(1, cfg.Workers/2)
	}
	// A Timeout within minLeaseMargin of the longest Duration would wrap
	// Timeout+minLeaseMargin around to a negative bound that every Lease
	// passes.
	if cfg.Timeout > math.MaxInt64-minLeaseMargin || cfg.Lease < cfg.Timeout+minLeaseMargin {
		return errorf("InboxConfig.Lease (%s) must exceed Timeout (%s) by %s at least: a lease that expires while its attempt still runs hands the event to another worker, and the attempt is counted twice; and an event whose lease has less than Timeout left when a worker takes it is given back instead of attempted", cfg.Lease, cfg.Timeout, minLeaseMargin)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return nil
}

// Handler returns the http.Handler of the webhook route in inbox mode. It
// answers as the synchronous [Handler] does up to the store (405, 413, 400
// signature, 400 event, API versions, ignored types), then stores the
// verified event with one statement and answers:
//
//	200 stored, to be applied by a worker          {"outcome":"queued"}
//	200 already in the inbox, whatever its state    {"outcome":"duplicate"}
//	200 no handler for the type                     {"outcome":"ignored"}
//	500 InboxConfig.Now outside the years 1 to 9999
//	    (a fake clock set wrong): nothing stored    {"error":"processing_failed"}
//	503 the event could not be stored               {"error":"store_unavailable"}
//
// Queued and duplicate mean the event is durably stored (ignored stores it
// only with cfg.RecordIgnored); a 503 given as cfg.Timeout ran
// out while the insert was on its way may come with it stored (a retry is
// then a duplicate, and wakes the workers when this Handler's inbox
// answered that 503: the insert whose answer was lost woke none). On a
// PgxStore, an insert that failed as a dropped connection does runs again
// on another; one that then finds the event stored is answered duplicate
// and wakes the workers too, as the first try may have stored it.
// cfg.Timeout bounds the insert; cfg.Now is not used: InboxConfig.Now
// dates the stored event. The workers decode data.object
// as InboxConfig.DisableFastDecoder says: cfg.DisableFastDecoder set
// without it is refused, as it would change nothing. A cfg without an
// Observer or a Logger takes InboxConfig's, so that one set on the inbox
// watches and logs the deliveries as well as the attempts.
func (in *Inbox) Handler(cfg Config) (*Handler, error) {
	if err := in.made("Handler"); err != nil {
		return nil, err
	}
	if cfg.DisableFastDecoder && in.d.fast {
		return nil, errorf("Inbox.Handler: Config.DisableFastDecoder has no effect in inbox mode, where the workers decode data.object: set InboxConfig.DisableFastDecoder")
	}
	if cfg.Observer == nil {
		cfg.Observer = in.cfg.Observer
	}
	if cfg.Logger == nil {
		cfg.Logger = in.cfg.Logger
	}
	h, err := newHandler(in.d.store, cfg)
	if err != nil {
		return nil, err
	}
	h.dispatcher = in.d
	h.inbox = in
	return h, nil
}

// enqueue stores a verified event in the inbox; the answer of the
// Handler's inbox mode.
func (h *Handler) enqueue(ctx context.Context, env *envelope.Envelope, payload []byte, handled bool, res *Result) (int, []byte) {
	in := h.inbox
	now := in.cfg.Now()
	if err := checkStoredTime("InboxConfig.Now", now); err != nil {
		res.Outcome, res.Err = OutcomeFailed, err // a clock set wrong: nothing is stored
		return http.StatusInternalServerError, bodyFailed
	}
	in.storedAt.Store(now.UnixNano())
	row := inboxRow{InboxRecord: InboxRecord{
		Kind: KindEvent, EventID: env.ID, EventType: env.Type, ObjectID: env.ObjectID, Account: env.Account,
		Livemode: env.Livemode, APIVersion: env.APIVersion, Created: time.Unix(env.Created, 0),
		State: InboxPending, ReceivedAt: now, NextAttemptAt: now,
	}, Payload: payload, Trace: h.cfg.Observer.link(ctx, h.log)}
	if !handled {
		row.State, row.NextAttemptAt, row.FinishedAt = InboxIgnored, time.Time{}, now
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	inserted, err := in.store.inboxEnqueue(ctx, &row)
	if err != nil {
		in.unanswered.add(row.EventID) // stored, perhaps, its answer lost
	} else if (in.unanswered.take(row.EventID) || row.insertRetried) && !inserted && handled {
		// Stripe's resend of an event whose insert went through
		// unanswered, or a delivery whose insert ran again after a
		// connection failure that may have come after it stored the
		// event: nothing woke the workers for it.
		in.signal()
		in.notifyOthers()
	}
	switch {
	case err != nil:
		res.Outcome, res.Err = OutcomeUnavailable, timeoutErr(ctx, h.cfg.Timeout, "storing the event in the inbox", "Config.Timeout", err)
		return http.StatusServiceUnavailable, bodyUnavailable
	case !inserted:
		res.Outcome = OutcomeDuplicate
	case !handled:
		res.Outcome = OutcomeIgnored
	default:
		res.Outcome = OutcomeQueued
		in.signal()
		in.notifyOthers()
	}
	return http.StatusOK, bodyOutcome[res.Outcome]
}

// unansweredInserts are the ids of the events whose insert by this
// process's Handler failed (answered 503): one may have gone through while
// its answer was lost (a connection cut, Config.Timeout), the event
// stored and no worker woken for it, so that it waited for a poll
// (PollInterval). Stripe's resend, answered duplicate, wakes them then.
// An ordinary duplicate costs one atomic load while none is kept; the
// latest maxUnansweredInserts failures are kept (a database down for a
// while fails every insert), a new one replacing the oldest, whose resend
// may have gone to another process or never come: those replaced wait
// for a poll as before.
type unansweredInserts struct {
	n     atomic.Int32
	mu    sync.Mutex
	ids   map[string]uint64 // each id kept, and the number of its latest add
	ring  []unansweredID    // the latest adds, add k at k % maxUnansweredInserts
	added uint64            // the adds so far
}

// unansweredID is one add of unansweredInserts.
type unansweredID struct {
	id string
	at uint64
}

const maxUnansweredInserts = 1024

func (u *unansweredInserts) add(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = make(map[string]uint64)
		u.ring = make([]unansweredID, maxUnansweredInserts)
	}
	u.added++
	slot := &u.ring[u.added%maxUnansweredInserts]
	if u.ids[slot.id] == slot.at { // the oldest add, unless its id was taken or added again since
		delete(u.ids, slot.id)
	}
	*slot = unansweredID{id, u.added}
	u.ids[id] = u.added
	u.n.Store(int32(len(u.ids)))
}

// take reports whether id is kept, and forgets it.
func (u *unansweredInserts) take(id string) bool {
	if u.n.Load() == 0 {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.ids[id]
	delete(u.ids, id)
	u.n.Store(int32(len(u.ids)))
	return ok
}

// signal wakes this process's workers.
func (in *Inbox) signal() {
	in.signals.Add(1)
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// poolSizer is a store on a pool of connections: PgxStore on a
// *pgxpool.Pool.
type poolSizer interface {
	// maxConns is the pool's MaxConns; false when the store is on no pool.
	maxConns() (int32, bool)
}

// checkPoolSize warns when the store's pool has fewer connections than
// Run's workers hold at once (and its LISTEN one more): the workers beyond
// them would wait for a connection.
func (in *Inbox) checkPoolSize(ctx context.Context) {
	p, ok := in.store.(poolSizer)
	if !ok {
		return
	}
	n, ok := p.maxConns()
	need := in.cfg.Workers
	if _, listens := in.store.(inboxNotifier); listens && !in.cfg.PollOnly {
		need++
	}
	if !ok || int(n) >= need {
		return
	}
	in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: the store's pool has fewer connections than the workers hold at once; "+
		"the workers beyond them wait for a connection: set the pool's MaxConns to InboxConfig.Workers plus one, plus what the service's other work takes",
		slog.Int("max_conns", int(n)), slog.Int("workers", in.cfg.Workers), slog.Bool("listens", need > in.cfg.Workers))
}

// inboxNotifier is a store that wakes the workers of other processes:
// PgxStore, with LISTEN/NOTIFY.
type inboxNotifier interface {
	// inboxNotify tells the other processes' workers that events are due.
	inboxNotify(ctx context.Context) error
	// inboxListen calls listening once it listens, then wake for every
	// notification until ctx is done or the connection fails, and returns
	// why it stopped.
	inboxListen(ctx context.Context, listening, wake func()) error
}

// notifyOthers sends a notification to other processes, outside the
// inserting transaction: a notifying transaction holds a global lock until
// its commit is flushed, so notifying commits would go one at a time. At
// most one notification is in flight per process; the events stored
// meanwhile share the next one.
func (in *Inbox) notifyOthers() {
	n, ok := in.store.(inboxNotifier)
	if !ok || in.cfg.PollOnly {
		return
	}
	in.notify.do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), in.cfg.Timeout)
		defer cancel()
		if err := n.inboxNotify(ctx); err != nil {
			// Workers of other processes poll: a lost notification
			// costs at most PollInterval.
			in.log.LogAttrs(ctx, slog.LevelDebug, "idempotency inbox: notify failed", slog.String("error", err.Error()))
		}
	})
}

// coalescer runs a func on a goroutine of its own, one run at a time: the
// calls made while a run is in flight share the next run.
type coalescer struct {
	mu               sync.Mutex
	running, pending bool
}

// do asks for a run of fn: at once, or after the run in flight. Calls
// that share a run run the fn of the first of them: pass the same work.
func (c *coalescer) do(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = true
	if c.running {
		return
	}
	c.running = true
	go func() {
		for {
			c.mu.Lock()
			if !c.pending {
				c.running = false
				c.mu.Unlock()
				return
			}
			c.pending = false
			c.mu.Unlock()
			fn()
		}
	}()
}

// Run applies due events, and runs due tasks, with InboxConfig.Workers
// workers until ctx is done, then returns once the attempts in flight have
// ended: nil, or an error wrapping [ErrShutdownTimeout] when it had to cut
// some. Start it beside the inbox's Handler in each process that is to
// apply events (see the example of NewInbox); tests drive an inbox with
// WorkDue instead. It returns an error at once if Run is already running on
// this Inbox, or WorkDue is.
//
// Once ctx is done, Run takes no more events and gives back those leased
// ahead that no worker started (as they were: pending, or failed with the
// last attempt's error; their attempt not counted). The attempts in flight
// get InboxConfig.ShutdownTimeout to finish; the rest are cancelled, roll
// back and are recorded failed (retried after the backoff, or dead-lettered
// at their last attempt), and Run returns an error wrapping
// [ErrShutdownTimeout] that says how many, as http.Server.Shutdown returns
// its context's error when its deadline cut connections. That count leaves
// out an attempt that ended before the deadline, however close to it, one
// whose event was applied and that was still running its AfterCommit funcs
// then, and one that had applied its event or failed on its own and was
// being reported then. A handler that ignores its context holds Run up;
// besides the attempts and the give-backs, only a lease already sent holds
// it, for its answer: an idle Run returns at once, waiting for no poll, and
// on PostgreSQL its listen connection stops waiting for a notification at
// once, whatever the pool's connections do with a cancelled context
// (pgconn.CancelRequestContextWatcherHandler, a DeadlineDelay).
//
// While it runs, an event leased ahead that has less than
// InboxConfig.Timeout of its lease left when a worker takes it is given back
// the same way and leased afresh, so that no attempt outlasts its lease. An
// event whose lease expired (its worker died, hung or lost its connection)
// is leased alone, attempted once the attempts at the events leased before
// it have ended (at the latest half of InboxConfig.Lease less Timeout into
// its lease, while an attempt started then still ends within it), and Run
// leases nothing else until its attempt has ended or its lease has: if it is
// what killed that worker's process, and kills this one too, it dies alone;
// if its attempt hangs, it holds its worker only.
func (in *Inbox) Run(ctx context.Context) error {
	if err := in.made("Run"); err != nil {
		return err
	}
	if !in.running.CompareAndSwap(false, true) {
		return errorf("Inbox.Run is already running")
	}
	defer in.running.Store(false)
	if in.workingDue.Load() > 0 {
		return errorf("Inbox.Run: WorkDue is running on this Inbox (WorkDue drives an inbox without Run, in tests)")
	}
	in.started.Store(true)
	defer in.started.Store(false)
	in.checkPoolSize(ctx)

	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var workers sync.WaitGroup
	if n, ok := in.store.(inboxNotifier); ok && !in.cfg.PollOnly {
		workers.Go(func() { in.listen(ctx, n) })
	}
	// Events are leased ahead into a queue twice as long as the workers
	// that apply: a worker that finishes takes the next event at once
	// instead of waiting for a lease round trip, a worker about to commit
	// finds the event after its own waiting (inboxWorker.next), and leases
	// come in batches of at least half the queue rather than one per
	// finished event. The events workers took ahead count as queued. A
	// queued event waits for at most two attempts of others before its own
	// starts.
	queue := make(chan inboxRow, 2*in.cfg.Workers)
	var ahead atomic.Int64
	// alone is the end of the lease of an event leased alone after its
	// worker died (inboxRow.LeaseExpired), while it is queued or
	// attempted; nil when there is none. It may be what killed that
	// worker's process: until its attempt ends, no event is leased to die
	// with it if it kills this one too. Not past its lease, though: an
	// attempt that outlasts it is hung (its handler ignores its context),
	// and holds its worker, not the whole process.
	var alone atomic.Pointer[time.Time]
	// held is that event until no other is queued or attempted (busy
	// counts the events sent to the workers that they have not done with):
	// started beside them, it would take them down with it too. Not past
	// holdUntil, though, while its attempt can still start within its
	// lease: an attempt that hangs beside it delays it, and does not have
	// it given back untried and leased again as any other event. Run
	// wakes then (heldTimer) even when nothing else wakes it.
	var held *inboxRow
	heldTimer := time.NewTimer(0)
	defer heldTimer.Stop()
	var busy atomic.Int64
	var cut shutdownCut
	send := func(row inboxRow) {
		busy.Add(1)
		queue <- row // never blocks: only this loop sends, into the room it counted
	}
	first, _ := in.workLimit(false)
	gate := newWorkGate(first) // the limit before any worker enters
	in.gate.Store(gate)
	for range in.cfg.Workers {
		workers.Go(func() {
			w := inboxWorker{in: in, stop: ctx, queue: queue, aheadCount: &ahead, alone: &alone, busy: &busy, gate: gate, cut: &cut}
			w.run(workCtx)
		})
	}
	ticker := time.NewTicker(in.cfg.PollInterval)
	defer ticker.Stop()
	quiet := time.NewTimer(0) // when IngestWorkers may stop holding the others back
	defer quiet.Stop()
	failing, behind := false, false
	for ctx.Err() == nil {
		if in.clock.due() {
			in.clock.check(ctx, in)
		}
		pass := in.signals.Load()
		if held != nil && (busy.Load() == 0 || !in.cfg.Now().Before(in.holdUntil(held))) {
			send(*held)
			held = nil
		}
		limit, until := in.workLimit(behind)
		gate.setLimit(limit)
		lone := alone.Load()
		if free := 2*limit - len(queue) - int(ahead.Load()); free >= limit && (lone == nil || !in.cfg.Now().Before(*lone)) {
			rows, err := in.lease(ctx, free)
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					in.log.LogAttrs(ctx, slog.LevelError, "idempotency inbox: cannot take due events; retrying every poll interval",
						slog.String("error", err.Error()))
				}
				failing = true
			case err == nil && failing:
				in.log.LogAttrs(ctx, slog.LevelInfo, "idempotency inbox: taking due events again")
				failing = false
			}
			wasBehind := behind
			if len(rows) > 0 {
				behind = in.lagging(rows)
			}
			for _, row := range rows {
				if ctx.Err() != nil {
					in.release(ctx, &row) // leased as Run was stopped
					continue
				}
				if row.LeaseExpired {
					alone.Store(&row.LeaseUntil) // the only row of its lease
					held = &row
					continue
				}
				send(row)
			}
			if held != nil || (err == nil && (len(rows) == free || behind != wasBehind)) {
				continue // more may be due, or more workers may apply
			}
		}
		var quietC <-chan time.Time
		if !until.IsZero() {
			quiet.Reset(until.Sub(in.cfg.Now()))
			quietC = quiet.C
		}
		var heldC <-chan time.Time
		if held != nil {
			heldTimer.Reset(in.holdUntil(held).Sub(in.cfg.Now()))
			heldC = heldTimer.C
		}
		in.idleAt.Store(pass + 1)
		select {
		case <-ctx.Done():
		case <-in.wake:
		case <-ticker.C:
		case <-quietC:
		case <-heldC:
		}
		in.idleAt.Store(0)
	}
	if held != nil {
		in.release(ctx, held) // leased as Run was stopped
	}
	gate.setLimit(in.cfg.Workers) // every worker drains the queue
	close(queue)                  // the workers apply what is queued, then return

	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	grace := time.NewTimer(in.cfg.ShutdownTimeout)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		cut.cut(cancelWork)
		<-done
		if n := cut.n.Load(); n > 0 {
			what := "attempts"
			if n == 1 {
				what = "attempt"
			}
			return errorf("Inbox.Run: %w: %d %s, %s after the stop; each is retried, or dead-lettered at its last attempt", ErrShutdownTimeout, n, what, in.cfg.ShutdownTimeout)
		}
	}
	return nil
}

// shutdownCut counts the attempts Run's ShutdownTimeout cut: those
// still in flight when it cancelled them that then ended unapplied
// (failed, to be retried; dead-lettered at their last attempt; or their
// end not recorded, the store unreachable or their lease taken over). Not
// one that ended before the cut, however close to it, nor one whose event
// was applied and that was still running its AfterCommit funcs, nor one
// whose end was known (applied, or failed on its own) and that was being
// reported (logged, OnResult, the Observer) as the cut came.
type shutdownCut struct {
	cancelled atomic.Bool
	n         atomic.Int64
}

// cut cancels the attempts in flight (cancel), each counted as it ends.
func (c *shutdownCut) cut(cancel func()) {
	c.cancelled.Store(true) // before the cancellation that an attempt ends on
	cancel()
}

// came reports whether the cut has come; false on a nil c, an attempt
// that no worker of Run's makes (WorkDue's).
func (c *shutdownCut) came() bool { return c != nil && c.cancelled.Load() }

// ended counts an attempt that ended in state end, when the cut came
// before its end was known (cutFirst, read as its report began: false on
// a nil c) and left it unapplied.
func (c *shutdownCut) ended(cutFirst bool, end InboxState) {
	if cutFirst && (end == "" || end == InboxFailed || end == InboxDeadLetter) {
		c.n.Add(1)
	}
}

// workLimit is how many workers apply events now: IngestWorkers while
// this process's Handler stores deliveries and no event taken lags behind,
// until the time returned, else all Workers (and the zero time).
func (in *Inbox) workLimit(behind bool) (int, time.Time) {
	stored := in.storedAt.Load()
	if behind || stored == 0 || in.cfg.IngestWorkers >= in.cfg.Workers {
		return in.cfg.Workers, time.Time{}
	}
	now := in.cfg.Now()
	if now.UnixNano() < stored && in.storedAt.CompareAndSwap(stored, now.UnixNano()) {
		// The clock went back past the last delivery (NTP stepped it):
		// the quiet time counts from now, not from a time it reaches
		// only after as long as the step.
		stored = now.UnixNano()
	}
	until := time.Unix(0, stored).Add(ingestQuiet)
	if !now.Before(until) {
		return in.cfg.Workers, time.Time{}
	}
	return in.cfg.IngestWorkers, until
}

// lagging reports whether an event of rows has been due for longer than
// InboxConfig.MaxIngestLag.
func (in *Inbox) lagging(rows []inboxRow) bool {
	now := in.cfg.Now()
	for i := range rows {
		if now.Sub(rows[i].DueAt) > in.cfg.MaxIngestLag {
			return true
		}
	}
	return false
}

// workGate bounds how many of Run's workers apply events at once. A
// worker enters it before it takes an event from the queue, so that no
// event waits outside the queue, and leaves it after the attempt, unless
// it took the next event ahead meanwhile, which it does only while the
// gate is not over its limit. A lowered limit takes effect as the
// attempts begun under the old one end; a worker inside that waits for
// an event, with none begun, steps out at once (stay).
type workGate struct {
	mu      sync.Mutex
	cond    sync.Cond
	active  int
	limit   int
	lowered chan struct{} // closed when the limit is lowered, then replaced
}

func newWorkGate(limit int) *workGate {
	g := &workGate{limit: limit, lowered: make(chan struct{})}
	g.cond.L = &g.mu
	return g
}

// stay is for a worker inside the gate that is about to wait for an
// event: it leaves the gate and reports false when the gate is over its
// limit; otherwise it returns a channel closed when the limit is lowered,
// which the worker waits on too, to ask again.
func (g *workGate) stay() (<-chan struct{}, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active > g.limit {
		g.active-- // the others are kept out while it is over: no one to wake
		return nil, false
	}
	return g.lowered, true
}

func (g *workGate) enter() {
	g.mu.Lock()
	for g.active >= g.limit {
		g.cond.Wait()
	}
	g.active++
	g.mu.Unlock()
}

func (g *workGate) leave() {
	g.mu.Lock()
	g.active--
	g.mu.Unlock()
	g.cond.Signal()
}

// over reports whether more workers are inside than the limit lets in.
func (g *workGate) over() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active > g.limit
}

func (g *workGate) setLimit(n int) {
	g.mu.Lock()
	raised := n > g.limit
	if n < g.limit {
		close(g.lowered)
		g.lowered = make(chan struct{})
	}
	g.limit = n
	g.mu.Unlock()
	if raised {
		g.cond.Broadcast()
	}
}

// inboxWorker is one of Run's workers. It applies the events of the
// queue one at a time; while an attempt commits, it takes the next one
// ahead from the queue, so that on PostgreSQL the commit begins that
// event's transaction in the same round trip (txChain).
type inboxWorker struct {
	in     *Inbox
	stop   context.Context // Run's: done when Run is to stop
	queue  <-chan inboxRow
	ahead  *inboxRow // taken from the queue by next, applied next
	closed bool      // the queue is closed and empty
	chain  txChain
	// aheadCount counts the events Run's workers took ahead, for Run to
	// count them as queued.
	aheadCount *atomic.Int64
	alone      *atomic.Pointer[time.Time] // Run's: cleared when the event leased alone is done with
	busy       *atomic.Int64              // Run's: the events sent to the workers and not done with
	gate       *workGate
	cut        *shutdownCut // Run's: counts the attempts its ShutdownTimeout cut
	entered    bool         // the worker is inside the gate
}

func (w *inboxWorker) run(ctx context.Context) {
	in := w.in
	w.chain.next = w.next
	defer w.chain.discard(ctx)
	defer func() {
		if w.entered {
			w.gate.leave()
		}
	}()
	for {
		row, ok := w.take()
		if !ok {
			return
		}
		w.work(ctx, row)
		if row.LeaseExpired {
			// Its own hold only: an attempt that outlasted its lease may
			// end after Run leased the next such event alone.
			if lone := w.alone.Load(); lone != nil && lone.Equal(row.LeaseUntil) {
				w.alone.CompareAndSwap(lone, nil)
			}
		}
		if w.busy.Add(-1) == 0 || row.LeaseExpired {
			in.signal() // Run may send an event it leased alone, or lease again
		}
	}
}

// work applies row, or gives it back when no attempt at it may start.
func (w *inboxWorker) work(ctx context.Context, row inboxRow) {
	in := w.in
	if w.stop.Err() != nil {
		w.chain.discard(ctx)
		in.release(ctx, &row) // stopping: start nothing new
		return
	}
	if !in.leaseLeft(&row) {
		// It waited in the queue for too long: an attempt started
		// now could outlast its lease, and another worker would take
		// the event over while it runs. Given back, it is leased
		// again afresh.
		w.chain.discard(ctx)
		in.release(ctx, &row)
		in.signal()
		return
	}
	in.signal() // room in the queue
	chain := &w.chain
	if in.cfg.OnResult != nil {
		// OnResult runs once the commit returns. A chained commit
		// would have begun the next event's transaction by then, on a
		// pooled connection: an OnResult that queries the same pool
		// would wait for ever once every connection is held so.
		chain = nil
	}
	row.cut = w.cut
	in.attempt(ctx, row, chain)
	in.signal() // the object's next event may be due
	if w.ahead == nil {
		w.gate.leave()
		w.entered = false
	}
}

// take returns the event taken ahead, or else the queue's next, taken
// inside the gate. It returns false when the queue is closed and empty.
func (w *inboxWorker) take() (inboxRow, bool) {
	if r := w.ahead; r != nil { // the worker kept its place in the gate
		w.ahead = nil
		w.aheadCount.Add(-1)
		return *r, true
	}
	if w.closed {
		return inboxRow{}, false
	}
	for {
		if !w.entered {
			w.gate.enter()
			w.entered = true
		}
		lowered, ok := w.gate.stay()
		if !ok {
			w.entered = false
			continue
		}
		select {
		case r, ok := <-w.queue:
			return r, ok
		case <-lowered:
		}
	}
}

// next is the chain's: it takes the queue's next event ahead, if one is
// waiting, and returns its claim when an attempt at it can begin at once.
func (w *inboxWorker) next() *Claim {
	if w.ahead != nil || w.closed || w.stop.Err() != nil || w.gate.over() {
		return nil
	}
	var row inboxRow
	select {
	case r, ok := <-w.queue:
		if !ok {
			w.closed = true
			return nil
		}
		row = r
	default:
		return nil
	}
	w.ahead = &row
	w.aheadCount.Add(1)
	if row.Kind != KindEvent || !w.in.leaseLeft(&row) {
		return nil
	}
	env, err := w.ahead.parsed()
	if err != nil || !w.in.d.handles(env.Type) {
		return nil
	}
	c := w.in.d.claim(env, row.ReceivedAt, w.in.fence(&row, &w.chain))
	return &c
}

// holdUntil is when Run stops holding back row, leased alone after its
// lease expired, while other attempts run: half the margin its lease
// leaves beyond an attempt (Lease less Timeout), so that a worker taking it
// then still starts it within its lease.
func (in *Inbox) holdUntil(row *inboxRow) time.Time {
	return row.LeaseUntil.Add(-in.cfg.Timeout - (in.cfg.Lease-in.cfg.Timeout)/2)
}

// leaseLeft reports whether row's lease outlasts an attempt started now.
func (in *Inbox) leaseLeft(row *inboxRow) bool {
	return row.LeaseUntil.Sub(in.cfg.Now()) >= in.cfg.Timeout
}

// fence is the fence of an attempt at row, started now.
func (in *Inbox) fence(row *inboxRow, chain *txChain) *inboxFence {
	return &inboxFence{Attempt: row.Attempt, AttemptedAt: row.AttemptedAt, Now: in.cfg.Now(), clock: in.cfg.Now, Seq: row.Seq, chain: chain}
}

// listen relays notifications from other processes to the workers, and
// listens again after a lost connection. A loss is logged once, however
// many tries it takes to listen again (one every PollInterval while the
// database is down), and so is the listening again.
func (in *Inbox) listen(ctx context.Context, n inboxNotifier) {
	check := listenCheck{in: in, n: n}
	defer check.running.Wait()
	lost := false
	listening := func() {
		if lost {
			in.log.LogAttrs(ctx, slog.LevelInfo, "idempotency inbox: listening for notifications again")
			lost = false
		}
		check.start(ctx)
	}
	wake := func() {
		check.heard(ctx)
		in.signal()
	}
	for ctx.Err() == nil {
		err := n.inboxListen(ctx, listening, wake)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNotifyNeedsPool) || errors.Is(err, errNotifyPoolOfOne) {
			in.log.LogAttrs(ctx, slog.LevelInfo, "idempotency inbox: polling only", slog.String("reason", err.Error()))
			return
		}
		if !lost {
			in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: lost the notification connection; polling until it is back",
				slog.String("error", fmt.Sprint(err)))
			lost = true
		}
		in.signal() // what was notified meanwhile is found by a poll
		pause(ctx, in.cfg.PollInterval)
	}
}

// listenWait is how long after the NOTIFY of its check a listen connection
// must have heard a notification (see listenCheck). On a direct connection
// it arrives within milliseconds. It is fixed, neither derived from
// PollInterval nor configurable: it bounds the delivery of one
// notification, which has nothing to do with how often the workers poll
// (a PollInterval of 10 ms would warn of a server slow for a moment, one
// of an hour would keep the warning back an hour), and it delays nothing
// but the warning, as the workers poll all along.
const listenWait = 10 * time.Second

// listenCheck finds out whether notifications reach Run's listen
// connection. Behind PgBouncer in transaction pooling mode LISTEN succeeds
// on a server connection that PgBouncer lends to other clients afterwards,
// and every notification is lost; the workers would find other processes'
// events only by polling, and nobody would say why. Once per listen
// connection, it notifies the channel through another connection of the
// store, as another process does, and warns when no notification reached
// the listen connection within listenWait after that NOTIFY committed:
// once per Run, unless a notification arrives later, which says so. The
// workers poll meanwhile, as before.
type listenCheck struct {
	in      *Inbox
	n       inboxNotifier
	running sync.WaitGroup // the checks in flight

	mu      sync.Mutex
	conn    int  // listen connections so far
	arrived bool // a notification reached the current one
	warned  bool // and none has since
}

// start checks the listen connection that has just begun to listen.
func (c *listenCheck) start(ctx context.Context) {
	c.mu.Lock()
	c.conn++
	conn := c.conn
	c.arrived = false
	c.mu.Unlock()
	c.running.Go(func() {
		notifyCtx, cancel := context.WithTimeout(ctx, c.in.cfg.Timeout)
		err := c.n.inboxNotify(notifyCtx)
		cancel()
		if err != nil {
			return // nothing learnt: the connection may be lost already
		}
		if !pause(ctx, c.in.listenWait) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.conn != conn || c.arrived || c.warned {
			return
		}
		c.warned = true
		c.in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: no notification reached the listen connection; "+
			"behind PgBouncer in transaction pooling mode LISTEN does not work: set InboxConfig.PollOnly (until then, other processes' events wait for a poll)",
			slog.Duration("waited", c.in.listenWait), slog.Duration("poll_interval", c.in.cfg.PollInterval))
	})
}

// heard records a notification on the current listen connection.
func (c *listenCheck) heard(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrived {
		return
	}
	c.arrived = true
	if c.warned {
		c.warned = false
		c.in.log.LogAttrs(ctx, slog.LevelInfo, "idempotency inbox: a notification reached the listen connection after all")
		return
	}
	c.in.log.LogAttrs(ctx, slog.LevelDebug, "idempotency inbox: notifications reach the listen connection")
}

// lease takes up to n due events.
// The lease is not cut short by ctx: a lease that committed while its
// caller gave up would leave its events processing, unworked, until their
// leases expired, at the cost of an attempt each. What it returns is
// worked, within the shutdown's grace.
func (in *Inbox) lease(ctx context.Context, n int) ([]inboxRow, error) {
	leaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.cfg.Timeout)
	defer cancel()
	now := in.cfg.Now()
	if err := checkStoredTime("InboxConfig.Now", now); err != nil {
		return nil, err
	}
	rows, dead, err := in.store.inboxLease(leaseCtx, now, n, in.cfg.Lease, in.cfg.MaxAttempts)
	for _, rec := range dead {
		in.reportLeaseExpired(ctx, rec, "", now)
	}
	return rows, err
}

// reportLeaseExpired reports the end of an attempt whose lease expired
// with no end recorded (its worker died, hung, or could not record it),
// failed, as any attempt is, to InboxConfig.OnResult, the Observer (a
// span of its own, linked to link) and the log, with Err wrapping
// ErrLeaseExpired. rec is that attempt's record: dead-lettered (State
// dead_letter) by the lease that found it expired at the last attempt;
// or, before the last, as it was when the attempt that takes it over
// leased it (State processing), reported as that attempt starts, the
// event being retried (State failed). Without it, an event that kills
// its process every time would reach dead letter unseen by the attempt
// metrics. Its Duration runs from the attempt's start to found, when a
// lease found it expired: the time the attempt held the event, a lease
// at least.
func (in *Inbox) reportLeaseExpired(ctx context.Context, rec InboxRecord, link string, found time.Time) {
	st := InboxFailed
	if rec.State == InboxDeadLetter {
		st = InboxDeadLetter
	}
	ctx, done := in.cfg.Observer.attempt(ctx, in.log, rec, link)
	res := Result{EventID: rec.EventID, EventType: rec.EventType, ObjectID: rec.ObjectID, Account: rec.Account, Attempt: rec.Attempt,
		Outcome: OutcomeFailed, State: st, Err: leaseExpiredErr(rec.Attempt, nil),
		Duration: max(found.Sub(rec.AttemptedAt), 0)}
	if rec.Kind == KindTask {
		res.Kind = KindTask // empty for an event, as in every other event attempt's Result
	}
	report(ctx, in.log, in.cfg.OnResult, done, &res)
}

// WorkDue makes, on the caller's goroutine, every attempt due at the
// inbox's clock, at events and at tasks, and those that come due as others
// finish (the next event of an object, a task an attempt enqueued), until
// none is due; it returns how many attempts it made. With a fake clock
// (InboxConfig.Now, idempotencytest.Clock) it drives the inbox
// deterministically in tests, without Run: deliver, WorkDue, set the clock
// to a failed event's NextAttemptAt, WorkDue again. Events of different
// objects due at one moment are attempted in an order the store picks.
//
// It refuses, with an error and no attempt, to run while Run runs on this
// Inbox, and Run refuses to start while it runs (calls of WorkDue may run
// together; another Inbox of the same store, another process's, is not
// refused). Once ctx is done it starts no attempt: it gives back the events
// it leased and did not start (as they were: pending, or failed with the
// last attempt's error; their attempt not counted) and returns ctx's error.
//
// It runs a task that snoozes once per call: one that comes due again
// within the call (Snooze(0) on a clock that stands still) is held, leased,
// and given back, pending and due, for the next call; a call that outlasts
// that lease (slow attempts, a clock moved on) leases it afresh, rather than
// find its lease expired and take it over as one whose worker died. An event
// or task leased with others whose lease has less than InboxConfig.Timeout
// left when its turn comes is given back and leased afresh, as Run's workers
// do, rather than attempted beside a worker that may take it over.
func (in *Inbox) WorkDue(ctx context.Context) (int, error) {
	if err := in.made("WorkDue"); err != nil {
		return 0, err
	}
	in.workingDue.Add(1)
	defer in.workingDue.Add(-1)
	if in.running.Load() {
		return 0, errorf("Inbox.WorkDue: Run is running on this Inbox (WorkDue drives an inbox without Run, in tests)")
	}
	attempts := 0
	snoozed := make(map[string]bool) // the tasks that snoozed in this call
	var held []inboxRow              // those leased again, kept leased until the call returns
	defer func() {
		for i := range held {
			in.release(ctx, &held[i])
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return attempts, err
		}
		held = in.renewHolds(ctx, held)
		rows, err := in.lease(ctx, in.cfg.Workers)
		if err != nil || len(rows) == 0 {
			return attempts, err
		}
		for _, row := range rows {
			switch {
			case ctx.Err() != nil:
				in.release(ctx, &row) // leased with the others; never started
			case snoozed[row.EventID]:
				held = append(held, row)
			case !in.leaseLeft(&row):
				// The attempts before it outlasted its lease: started
				// now, it could run beside another worker that takes it
				// over. Given back, it is leased afresh, as Run's are.
				in.release(ctx, &row)
			default:
				if in.attempt(ctx, row, nil) == InboxPending && row.Kind == KindTask {
					snoozed[row.EventID] = true
				}
				attempts++
			}
		}
	}
}

// renewHolds gives back the tasks WorkDue holds (snoozed in the call and
// leased again) whose lease has less than InboxConfig.Timeout left, and
// returns those it keeps: the call's attempts outlasted the lease (a slow
// call, a test's clock moved on), and the next lease would find it
// expired, taking the task over as if its worker had died, or at its last
// attempt dead-lettering it unrun. Given back pending and due, the task
// is leased afresh, and held again.
func (in *Inbox) renewHolds(ctx context.Context, held []inboxRow) []inboxRow {
	kept := held[:0]
	for i := range held {
		if in.leaseLeft(&held[i]) {
			kept = append(kept, held[i])
			continue
		}
		in.release(ctx, &held[i])
	}
	clear(held[len(kept):])
	return kept
}

// attempt applies one leased event, or runs one leased task, and records
// how it ended. It returns the state it left the event or task in, as
// reported (Result.State): a task that snoozed is pending again, its
// attempt not counted.
//
// chain, when not nil, is the worker's (see inboxWorker).
func (in *Inbox) attempt(ctx context.Context, row inboxRow, chain *txChain) (end InboxState) {
	if row.LeaseExpired {
		in.reportTakenOver(ctx, &row)
		in.logSuspect(ctx, &row)
	}
	ctx, done := in.cfg.Observer.attempt(ctx, in.log, row.InboxRecord, row.Trace)
	ctx = in.obs.withObserver(ctx)
	if row.Kind == KindTask {
		return in.attemptTask(ctx, &row, done)
	}
	start := time.Now()
	res := Result{EventID: row.EventID, EventType: row.EventType, ObjectID: row.ObjectID, Account: row.Account, Attempt: row.Attempt}
	defer func() {
		res.Duration = time.Since(start)
		in.reportEnd(ctx, &row, done, &res)
		end = res.State
	}()
	env, err := row.parsed()
	if err != nil { // verified and parsed at ingest: the stored bytes changed
		res.Outcome, res.Err = OutcomeFailed, errorf("%w: stored payload: %w", ErrMalformedEvent, err)
		res.State = settled(InboxDeadLetter, in.settle(ctx, &row, InboxDeadLetter, res.Err))
		return
	}
	if !in.d.handles(env.Type) {
		if in.cfg.Now().Sub(row.ReceivedAt) < in.cfg.RetryUnhandledFor {
			// A process that had the handler stored it: one of another
			// release (a rolling deploy) is to apply it. The error says
			// until when, or, at the last attempt, that MaxAttempts came
			// first (a short Backoff).
			why := errorf("%w: %s (retried until RetryUnhandledFor, %s, after it was received, for a process that has the handler)",
				ErrNoHandler, env.Type, in.cfg.RetryUnhandledFor)
			if in.lastAttempt(&row) {
				why = errorf("%w: %s (dead-lettered at MaxAttempts, %d, before RetryUnhandledFor, %s, after it was received)",
					ErrNoHandler, env.Type, in.cfg.MaxAttempts, in.cfg.RetryUnhandledFor)
			}
			res.Outcome, res.Err = OutcomeFailed, why
			res.State = in.settleFailure(ctx, &row, res.Err)
			return
		}
		// No process applied it: its handler was removed on purpose since
		// it was stored. Recorded as ignored, like an event that never had
		// one, with why (a receiver with the handler stored it), worded as
		// the failed attempts' error: an operator's matter, logged at Warn.
		why := errorf("%w: %s (recorded ignored: not applied within RetryUnhandledFor, %s, after it was received)",
			ErrNoHandler, env.Type, in.cfg.RetryUnhandledFor)
		res.Outcome, res.IgnoredReason = OutcomeIgnored, errorText(why)
		res.State = settled(InboxIgnored, in.settle(ctx, &row, InboxIgnored, why))
		return
	}
	outcome, err := in.d.run(ctx, env, row.Payload, row.ReceivedAt, in.fence(&row, chain), &res)
	res.Outcome, res.Err = outcome, err
	switch {
	case errors.Is(err, ErrLeaseLost):
		row.leaseLost = true // not recorded: the newer attempt owns the event (reportEnd)
	case err == nil && outcome == OutcomeDuplicate:
		// Claimed before, by the synchronous Handler or another inbox: the
		// ledger has it. Or by the newer attempt that took this one's lease
		// over: then this attempt lost its lease, as above (settle says so).
		res.State = settled(InboxProcessed, in.settle(ctx, &row, InboxProcessed, nil))
	case err == nil:
		res.State = inboxState(outcome) // recorded in the transaction that applied it
	default:
		res.State = in.settleFailure(ctx, &row, err)
	}
	return // end is set as the attempt is reported (above)
}

// reportTakenOver reports the attempt that the attempt at row, leased
// because its lease expired, takes over: once, as row's attempt starts,
// not when it is leased. Run and WorkDue give back an event they leased
// and did not start, under the lease it lost (release), and the lease
// that takes it next would report that attempt again. Its record is the
// one that attempt leased: its number, its start and its lease's end. Its
// Duration ends at row's lease, which found it expired, not as row's
// attempt starts: Run may hold row back, leased, for a while.
func (in *Inbox) reportTakenOver(ctx context.Context, row *inboxRow) {
	rec := row.InboxRecord
	rec.Attempt, rec.AttemptedAt, rec.LeaseUntil = row.Attempt-1, row.PrevAttemptedAt, row.DueAt
	in.reportLeaseExpired(ctx, rec, row.Trace, row.AttemptedAt)
}

// logSuspect logs, as it starts, an attempt at an event or a task whose
// last worker died, hung or lost its connection holding it. An attempt is
// otherwise logged when it returns: an event that kills every process that
// runs it (a fatal error recover cannot catch, os.Exit) would leave no line
// about it until its lease dead-letters it. Leased alone, it is the only
// attempt such a process starts: this is the last line it writes about one.
func (in *Inbox) logSuspect(ctx context.Context, row *inboxRow) {
	if !in.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	object := Result{ObjectID: row.ObjectID, Account: row.Account}
	attrs := object.appendObject(row.logIDs(slog.Int("attempt", row.Attempt)))
	in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: attempting, alone, what a worker held when its lease expired ("+leaseExpiredCause+"); if this process dies now, this is why", attrs...)
}

// reportEnd reports the end of the attempt at row: logged, to OnResult
// and to the Observer's done. An attempt whose end was not recorded, its
// lease lost to a newer attempt (found by the fence, or as its end was
// recorded) or the store unreachable as it recorded it, looks the row up
// (leaseLostEnd). One whose own commit, or the settle of its failure or
// of a task's snooze, went through while its answer was lost (the
// connection dropped after the statement) only seemed unrecorded: the
// record shows its end, and it is reported as it was recorded. Otherwise
// a lease that found its lease expired reports it, or one to come will:
// the attempt that takes it over, as it starts (reportTakenOver), or, at
// the last attempt, the lease that dead-letters it (reportLeaseExpired).
// Its end is then logged and ends its Observer span, failed with no State
// and Err wrapping ErrLeaseExpired, so that a metric counts that attempt
// once; OnResult, called once per attempt, is not called for it. One
// whose lease was lost while no lease reports it (the row redriven or
// forgotten while its own lease ran) is reported failed, with no State
// and Err wrapping ErrLeaseLost, whatever it returned.
func (in *Inbox) reportEnd(ctx context.Context, row *inboxRow, done func(Result), res *Result) {
	// Read before the report, which may still run as Run's
	// ShutdownTimeout passes: an attempt that ended before it, on its
	// own, was not cut.
	cutFirst := row.cut.came()
	onResult := in.cfg.OnResult
	if row.leaseLost || res.State == "" {
		own, byLease := in.leaseLostEnd(ctx, row, row.Kind == KindTask && res.Outcome == OutcomeQueued, res.Err)
		switch {
		case own == InboxFailed || own == InboxDeadLetter:
			res.State = own // the attempt's failure, as it was recorded
		case own != "":
			res.Outcome, res.State, res.Err = stateOutcome(own), own, nil
		case byLease:
			cause := res.Err
			if row.leaseLost {
				cause = lostLease(cause)
			}
			onResult, res.Outcome, res.State = nil, OutcomeFailed, ""
			res.Err = leaseExpiredErr(row.Attempt, cause) // cause nil: a snooze's, not recorded
		case row.leaseLost:
			// Whatever the handler or the task's func returned (an error,
			// Skip, Snooze, a duplicate), its end was not recorded.
			res.Outcome, res.State, res.Err = OutcomeFailed, "", lostLease(res.Err)
		default:
			// Recorded after all, and the row moved on since (redriven,
			// forgotten) within its own lease: reported as it ended.
		}
	}
	report(ctx, in.log, onResult, done, res)
	row.cut.ended(cutFirst, res.State)
}

// lostLease is err, the error of an attempt whose lease was lost, made to
// wrap ErrLeaseLost: ErrLeaseLost itself when err is nil.
func lostLease(err error) error {
	switch {
	case err == nil:
		return ErrLeaseLost
	case !errors.Is(err, ErrLeaseLost):
		return errorf("%w: %w", ErrLeaseLost, err)
	}
	return err
}

// leaseLostEnd looks up row's record once row's attempt found its end not
// recorded: the fence found the attempt no longer holding the row, or the
// store could not be reached as it recorded its end. It tells who reports
// the attempt.
//
// own is the state the record shows when row's attempt recorded its end
// after all: its COMMIT, or the settle of its failure or snooze, went
// through while the connection dropped before the answer, and what
// followed (the settle of the failure, the settle again on another
// connection, a claim again after a chained commit's session ended, the
// look-up after a settle that failed) found it done. That is processed,
// skipped, ignored, failed or dead_letter at row's very attempt (its
// number and its start), which no other attempt writes, but for a dead
// letter with the error the lease that dead-letters an expired attempt
// writes (leaseExpiredFormat). When row's attempt snoozed its task
// (snoozed), it is pending at the attempt before row's with row's start,
// which only that snooze writes: a snooze does not count its attempt and
// shows its own lease's time, and a lease after row's shows its own time;
// a redrive of attempt 1 (attempt 0, the start kept) is told apart by its
// count of redrives.
// A row leased again after row's failure was recorded shows it too:
// processing at the attempt after row's with row's failure (failure, the
// error row's attempt ended with) as its error (a lease that takes an
// expired attempt over writes leaseExpiredFormat instead), or given back
// to row's attempt and start, failed as it was (pending when a process of
// an earlier version gave it back). A row processing there with
// another error was redriven (or forgotten and delivered again) since a
// lease took row's attempt over, and climbed back: row's attempt, found
// by the fence, recorded nothing (one whose own failure, which it could
// not record, has the very text that redriven attempt recorded is still
// taken for its own, and reported again). The settle
// that follows a COMMIT whose answer was lost waits for row's record,
// which the attempt's transaction holds until it ends: a COMMIT still in
// progress then (carried out late, or waiting for synchronous
// replication) has ended when the record is read here.
//
// byLease reports whether a lease that finds row's lease expired reports
// row's attempt, or has: every such lease does, whatever MaxAttempts its
// process counts (the processes of one inbox may differ in it during a
// deploy), taking the attempt over or, at the last, dead-lettering it.
// The row tells when row's attempt still holds it under its own lease,
// its end not recorded (the lease to come reports it), when the lease
// that took it over wrote its error (leaseExpiredFormat) while that
// attempt runs (processing at the attempt after row's) or after it
// snoozed its task (pending at row's attempt), and when that lease
// dead-lettered it at row's attempt. When the row no longer tells (it was
// forgotten or redriven since, or moved on further), byLease is whether
// row's lease has expired by now: before that, no lease can have taken
// row's attempt over, and the row moved on from the attempt's own end,
// recorded. A row that cannot be read is taken for one still held at
// row's attempt, its end not recorded, which the lease to come reports.
func (in *Inbox) leaseLostEnd(ctx context.Context, row *inboxRow, snoozed bool, failure error) (own InboxState, byLease bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(in.cfg.Timeout, rollbackTimeout))
	defer cancel()
	recs, err := in.store.inboxList(ctx, InboxFilter{EventIDs: []string{row.EventID}, Limit: 1})
	if err != nil {
		return "", true
	}
	n, expired := row.Attempt, leaseExpired(row.Attempt)
	if len(recs) == 0 { // forgotten
		return "", !in.cfg.Now().Before(row.LeaseUntil)
	}
	r := recs[0]
	ownStart := r.AttemptedAt.Equal(row.AttemptedAt)
	switch {
	case snoozed && r.State == InboxPending && r.Attempt == n-1 && ownStart && r.Redrives == row.Redrives:
		// Its own snooze: uncounted, at its own lease's time. A redrive of
		// attempt 1 looks the same (attempt 0, the start kept), but counts.
		return InboxPending, false
	case r.Attempt == n && ownStart && r.State == InboxProcessing:
		return "", true // still held at its attempt: the lease to come reports it
	case r.Attempt == n && ownStart && r.State == InboxDeadLetter && r.LastError == expired:
		return "", true // dead-lettered by the lease that found it expired
	case r.Attempt == n && ownStart && r.State != InboxPending:
		return r.State, false
	case r.LastError == expired && (r.State == InboxProcessing && r.Attempt == n+1 || r.State == InboxPending && r.Attempt == n):
		return "", true // taken over, by an attempt that runs or snoozed
	case r.State == InboxProcessing && r.Attempt == n+1 && failure != nil && r.LastError == errorText(failure),
		r.State == InboxPending && r.Attempt == n && ownStart:
		return InboxFailed, false // its failure, recorded, then leased again
	}
	return "", !in.cfg.Now().Before(row.LeaseUntil)
}

// settled is st when err, the error of recording an attempt's end as st,
// is nil; and empty, as Result.State is when the end was not recorded.
func settled(st InboxState, err error) InboxState {
	if err != nil {
		return ""
	}
	return st
}

// release gives back a leased event that no attempt started, as it was
// before the lease: pending or failed as it was, with its last attempt's
// number, start and error, and due at once; one leased because its lease
// expired, processing under that expired lease again. If that cannot be
// recorded, the lease expires and the event is retried then.
func (in *Inbox) release(ctx context.Context, row *inboxRow) {
	next := in.cfg.Now()
	if row.LeaseExpired {
		// Still a suspect: given back under the lease it lost (its
		// PrevState, processing), it is leased alone again, not beside
		// others as a pending event.
		next = row.DueAt
	}
	in.settleAt(ctx, row, row.PrevState, previousError(row), next, true, row.PrevAttemptedAt)
}

// previousError is the error of the attempt before row's lease, to keep
// when the leased attempt does not count (given back, or snoozed): neither
// is a success, and an operator must still see why the last one failed.
func previousError(row *inboxRow) error {
	if row.LastError == "" {
		return nil
	}
	return errors.New(row.LastError)
}

// settleFailure records a failed attempt: failed and due again after the
// backoff, or dead-lettered after the last attempt. It returns the state
// recorded, or "" when it could not be.
func (in *Inbox) settleFailure(ctx context.Context, row *inboxRow, cause error) InboxState {
	st := InboxFailed
	if in.lastAttempt(row) {
		st = InboxDeadLetter
	}
	return settled(st, in.settle(ctx, row, st, cause))
}

// lastAttempt reports whether row's attempt is its last: a failure
// dead-letters it (InboxConfig.MaxAttempts).
func (in *Inbox) lastAttempt(row *inboxRow) bool {
	return row.Attempt >= in.cfg.MaxAttempts
}

// settle records an attempt's end, due again after the backoff when st is
// failed. It returns why the end was not recorded, or nil.
func (in *Inbox) settle(ctx context.Context, row *inboxRow, st InboxState, cause error) error {
	var next time.Time
	if st == InboxFailed {
		next = in.cfg.Now().Add(in.backoff(ctx, row))
	}
	return in.settleAt(ctx, row, st, cause, next, false, time.Time{})
}

// backoff is InboxConfig.Backoff's wait after row's failed attempt, none
// when it is negative. A Backoff that panics (a table indexed past its
// end) is logged and waits DefaultBackoff's: the panic would otherwise
// end the process with the attempt unrecorded, and again at each attempt
// until the expired leases dead-lettered the event.
func (in *Inbox) backoff(ctx context.Context, row *inboxRow) (wait time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			p := newPanicError(v)
			p.what = "InboxConfig.Backoff panicked"
			wait = DefaultBackoff(row.Attempt)
			in.log.LogAttrs(ctx, slog.LevelError, "idempotency inbox: InboxConfig.Backoff panicked; the next attempt waits DefaultBackoff's time",
				row.logIDs(slog.Int("attempt", row.Attempt), slog.Duration("wait", wait), slog.String("error", p.Error()))...)
		}
	}()
	return max(in.cfg.Backoff(row.Attempt), 0)
}

// settleAt records an attempt's end, due again at next when st is failed
// or pending, on a context that outlives a cancelled attempt. An attempt
// that does not count (uncounted: snoozed, or given back) shows
// attemptedAt as its record's. If the store cannot be reached, the lease
// expires and the event is retried.
func (in *Inbox) settleAt(ctx context.Context, row *inboxRow, st InboxState, cause error, next time.Time, uncounted bool, attemptedAt time.Time) error {
	now := in.cfg.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(in.cfg.Timeout, rollbackTimeout))
	defer cancel()
	ok, err := in.store.inboxSettle(ctx, row.EventID, row.Attempt, row.AttemptedAt, st, errorText(cause), next, now, uncounted, attemptedAt)
	if wait := next.Sub(now); ok && err == nil && !next.IsZero() && wait < in.cfg.PollInterval {
		time.AfterFunc(wait, in.signal) // due again sooner than the next poll
	}
	switch {
	case err != nil:
		msg := "idempotency inbox: cannot record an attempt; the event is retried when its lease expires"
		if row.Kind == KindTask {
			msg = "idempotency inbox: cannot record an attempt; the task is retried when its lease expires"
		}
		in.log.LogAttrs(ctx, slog.LevelError, msg, row.logIDs(slog.Int("attempt", row.Attempt), slog.String("error", err.Error()))...)
		return err
	case !ok:
		row.leaseLost = true
		in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: the event is no longer held at this attempt: a newer attempt took it over (this attempt's result is dropped), or this attempt's own commit went through unanswered (its report says so)",
			row.logIDs(slog.Int("attempt", row.Attempt))...)
		return ErrLeaseLost
	}
	return nil
}

// errorText is an attempt's error as the inbox keeps it: bounded, and valid
// text. The package's own errors never quote the payload; a handler's
// error is the handler's to keep clean, but for the stripe-go errors it
// wraps (maskedText).
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return keptText(maskedText(err))
}

// Redrive moves the events and tasks f selects back to pending with a
// fresh attempt budget (dead-lettered ones by default; failed ones too,
// and ignored events, by f.States), and returns how many; with f.DryRun
// it only counts them, changing nothing. Each row it moves counts the
// redrive in its record (InboxRecord.Redrives, and RedrivenAt, the
// inbox's clock), in the statement that moves it: an event dead-lettered
// again tells that it was redriven before, how often and when last. Fix
// the cause first: a redriven event is applied again as new. After a
// connected account that lost access (403 account_invalid) reconnected,
// f.Account redrives its events alone, with f.States dead_letter and
// failed those still retried too (a failed one holds back the account's
// newer events of its object until its next attempt). An ignored event is applied by a
// process with a handler for its type, after the later events of its
// object applied already (see RedriveFilter.States).
func (in *Inbox) Redrive(ctx context.Context, f RedriveFilter) (int, error) {
	if err := in.made("Redrive"); err != nil {
		return 0, err
	}
	events, tasks, err := in.RedriveByKind(ctx, f)
	return events + tasks, err
}

// RedriveByKind is Redrive, with the count of the events and of the tasks
// it moves (with f.DryRun, would move) told apart. Both kinds move at once,
// in one statement on PostgreSQL: when it fails, none has moved.
func (in *Inbox) RedriveByKind(ctx context.Context, f RedriveFilter) (events, tasks int, err error) {
	if err := in.made("RedriveByKind"); err != nil {
		return 0, 0, err
	}
	if err := f.check(); err != nil {
		return 0, 0, err
	}
	events, tasks, err = in.store.inboxRedrive(ctx, f, in.cfg.Now())
	if err == nil && events+tasks > 0 && !f.DryRun {
		in.signal()
		in.notifyOthers()
	}
	return events, tasks, err
}

// Stats counts the inbox's events and tasks by state (TaskCounts the
// tasks alone), dates the oldest one still to be applied and the newest
// attempt: what an alert needs ("oldest pending older than 5 minutes",
// "dead letters grew", "pending, and no attempt for 10 minutes"). Its
// cost follows the rows still to apply and the dead letters, not the
// rows the retention window keeps: a store may estimate a large count of
// processed, skipped or ignored rows (never of dead letters), and says
// so in InboxStats.Estimated.
func (in *Inbox) Stats(ctx context.Context) (InboxStats, error) {
	if err := in.made("Stats"); err != nil {
		return InboxStats{}, err
	}
	return in.store.inboxStats(ctx)
}

// MaxAttempts is how many attempts an event or a task gets before it is
// dead-lettered: [InboxConfig].MaxAttempts as NewInbox set it, its
// default when left 0. It reads no store: a page or a tool that shows an
// event's attempts says by it how many may still come. It is 0 for an
// Inbox NewInbox did not return (a zero or nil one, whose other methods
// fail), as NewInbox sets at least 1.
func (in *Inbox) MaxAttempts() int {
	if err := in.made("MaxAttempts"); err != nil {
		return 0
	}
	return in.cfg.MaxAttempts
}

// Running reports whether Run is running on in, in this process: from
// Run's start until it returns, its ShutdownTimeout included. It reads no
// store. The inbox records attempts, not the workers that poll for them:
// a metric of Running in each process (idempotencyotel's
// idempotency.inbox.running) tells workers that are down (no process runs
// Run) from workers that run and find nothing they may attempt (every
// pending event waits behind a failed one of its object), which the
// inbox's rows alone cannot. It is false for an Inbox NewInbox did not
// return (a zero or nil one).
func (in *Inbox) Running() bool {
	return in.made("Running") == nil && in.started.Load()
}

// Lookup returns the inbox record of an event, and false when the inbox
// does not have it. An id no event can have (empty, a NUL byte, invalid
// UTF-8, over 1024 bytes) is refused with [ErrInvalidKey], as [Inbox.Forget],
// [Inbox.HeldBy] and [Inbox.Payload] refuse it.
func (in *Inbox) Lookup(ctx context.Context, eventID string) (InboxRecord, bool, error) {
	if err := in.made("Lookup"); err != nil {
		return InboxRecord{}, false, err
	}
	if err := checkEventID("Inbox.Lookup", eventID); err != nil {
		return InboxRecord{}, false, err
	}
	recs, err := in.store.inboxList(ctx, InboxFilter{EventIDs: []string{eventID}, Limit: 1})
	if err != nil || len(recs) == 0 {
		return InboxRecord{}, false, err
	}
	return recs[0], true, nil
}

// HeldBy returns the events that keep eventID from being applied now,
// in the order its object's events are applied (Created, then EventID):
// what to look at when an event stays pending or failed past its
// NextAttemptAt. The events of one object (one ObjectID under one
// Account) are applied one at a time, in that order, so an event waits
// behind
//   - every event of its object that sorts before it and is still to be
//     applied (pending, failed or processing; Earlier is true): a failed
//     one holds it until it succeeds or is dead-lettered, a pending one
//     until it is applied;
//   - an event of its object that sorts after it and that a worker is
//     applying (processing under an unexpired lease, or past it in a
//     transaction still open; Earlier is false).
//
// Dead-lettered, ignored and finished events hold nothing back, and
// neither does a later event whose worker died (its lease expired). An
// earlier event whose worker died (processing, its LeaseUntil past) is
// listed: it holds the event back until the next lease takes it over,
// or, if that was its last attempt, dead-letters it, and no longer
// holds anything back then. An event held by nothing is due at its
// NextAttemptAt. HeldBy returns
// nothing for an event that does not wait on others: one about no object
// (and every task), one in a final state, one a worker is applying (under
// its own unexpired lease, or past it in a transaction still open), and
// one the inbox does not have. Of an object with many events
// it returns at most the first 100 holders that sort before eventID and
// the first 100 that sort after it. An id no event can have is refused
// with [ErrInvalidKey], as [Inbox.Lookup] refuses it.
//
// It reads the store once, on PostgreSQL over the inbox's object index,
// and only when called: the workers never ask. On PostgreSQL it probes,
// as the lease does, whether an event past its lease is still in a
// transaction (SELECT FOR SHARE SKIP LOCKED on its row): it needs a
// connection that may write, not a read-only transaction or a standby,
// and a role with UPDATE on the inbox table.
func (in *Inbox) HeldBy(ctx context.Context, eventID string) ([]InboxHolder, error) {
	if err := in.made("HeldBy"); err != nil {
		return nil, err
	}
	if err := checkEventID("Inbox.HeldBy", eventID); err != nil {
		return nil, err
	}
	return in.store.inboxHeldBy(ctx, eventID, in.cfg.Now(), maxInboxHolders)
}

// List returns the events and tasks f selects, newest received first,
// without their payloads or arguments.
func (in *Inbox) List(ctx context.Context, f InboxFilter) ([]InboxRecord, error) {
	if err := in.made("List"); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return in.store.inboxList(ctx, f)
}

// Payload returns the stored body of an inbox event, as Stripe sent it
// (for a task, its arguments as JSON), and false when the inbox does not
// have it: never stored, or pruned ([Retention].Payloads), or a finished
// task's arguments cleared by Prune after that window. An id no event can
// have is refused with [ErrInvalidKey], as [Inbox.Lookup] refuses it. It
// is the event's full data, customer details included: show it only to
// those allowed to see them.
func (in *Inbox) Payload(ctx context.Context, eventID string) ([]byte, bool, error) {
	if err := in.made("Payload"); err != nil {
		return nil, false, err
	}
	if err := checkEventID("Inbox.Payload", eventID); err != nil {
		return nil, false, err
	}
	return in.store.inboxPayload(ctx, eventID)
}

// Forget deletes what makes an event known, so that it is applied again
// when it comes next: its claim, the guards its transaction claimed and
// its inbox row. An id no event can have (empty, a NUL byte, invalid
// UTF-8, over 1024 bytes) is refused with [ErrInvalidKey]. See
// [PgxStore.Forget] for what stays and for how long other replicas still
// answer it duplicate.
func (in *Inbox) Forget(ctx context.Context, eventID string) (bool, error) {
	if err := in.made("Forget"); err != nil {
		return false, err
	}
	return in.store.Forget(ctx, eventID)
}
