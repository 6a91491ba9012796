// Package idempotencyotel reports what package idempotency does as
// OpenTelemetry metrics and traces: deliveries, inbox attempts, the
// inbox's depth, its oldest pending event and its last attempt, dead
// letters, the rows prunes delete, and the fetches of OnCurrent handlers
// from the Stripe API.
//
// It lives beside the core: a program that does not import it links no
// OpenTelemetry. Wire it through [idempotency.Observer]:
//
//	tel, err := idempotencyotel.New(idempotencyotel.Config{}) // the global providers
//	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Observer: tel.Observer()})
//	h, err := in.Handler(idempotency.Config{Secrets: secrets}) // takes the inbox's Observer
//	reg, err := tel.ObserveInbox(in) // the depth gauges; reg.Unregister() to stop
//
// Spans carry event ids, types, object ids, outcomes, statuses and attempt
// numbers; metrics only the attributes of the table below, none of them an
// id; both those of Config.Attributes too: a process with two inboxes
// names each in its Telemetry's (see ObserveInbox). Neither carries a payload
// field, a secret, an error's text (the Logger has the error) or a skip's
// or an ignored event's reason (Result.SkipReason, Result.IgnoredReason:
// free text, of which each value would be a series).
//
// Metrics (OpenTelemetry names; a Prometheus exporter writes dots as
// underscores, adds _total to counters and _seconds to durations):
//
//	name                                  instrument  attributes
//	idempotency.deliveries                counter     outcome, status (the HTTP status answered); 0 from the start for each pair a Handler answers (below)
//	idempotency.delivery.duration         histogram   outcome; seconds from a request's arrival to its answer
//	idempotency.attempts                  counter     outcome, kind (event, task), state (what the attempt left)
//	idempotency.attempt.duration          histogram   outcome, kind; seconds
//	idempotency.dead_letters              counter     kind; attempts that dead-lettered their event or task, 0 from the start for both kinds
//	idempotency.stripe.fetches            counter     result (ok, not_found, error); OnCurrent fetches
//	idempotency.stripe.fetch.duration     histogram   result; seconds
//	idempotency.inbox.depth               gauge       kind, state; rows in the inbox, every state a kind has, 0 included (ObserveInbox)
//	idempotency.inbox.oldest_pending_age  gauge       seconds since the oldest row still to apply was received, 0 when none (ObserveInbox)
//	idempotency.inbox.last_attempt_age    gauge       seconds since the newest attempt at an event or a task started, none when no row was attempted (ObserveInbox)
//	idempotency.inbox.running             gauge       1 while this process runs Inbox.Run on the inbox (Inbox.Running), else 0; read without the database (ObserveInbox)
//	idempotency.retention.pruned          counter     rows (event_ids, events, dead_letters, guards, tasks, objects, task_args_cleared); rows deleted by prunes through Pruner, 0 from the start (PruneEvery's first prune, at start, comes before the first scrape)
//
// The pairs of outcome and status a Handler answers, each counted from 0:
// processed, duplicate, ignored, skipped and queued 200; rejected 400, 405
// and 413; failed 500, and 503 when the Stripe API failed a thin event's
// fetch or a synchronous Handler's OnCurrent fetch with a failure that
// may pass (unreachable, 429, 5xx, an answer cut short, a fetch too
// slow); unavailable 503. Queued is an inbox's Handler's, processed and
// skipped a synchronous Handler's: the others' series stay at 0 in a
// service of one mode.
//
// An attempt whose lease expired with its end not recorded (its worker
// died, hung, or could not reach the database) is counted once, by the
// lease that found it expired, with a span of its own: the attempt that
// took the event over, as it started (state failed), or, at the last
// attempt, the lease that dead-lettered it. It is not counted again when
// its worker comes back or gives up recording its end: its span ends
// then.
//
// Spans follow OpenTelemetry's semantic conventions (semconv v1.43.0, the
// tracer's schema URL) for HTTP servers and messaging:
//
//   - Per request to a Handler, the delivery's span. When the request's
//     context holds no span of this process (nothing traced the request
//     before the Handler, or only read its traceparent), it is the
//     request's server span, named as the HTTP conventions name one:
//     "{method} {route}" ("POST /stripe/webhook"), the route the pattern
//     of the ServeMux that routed the request (http.route), or the method
//     alone ("POST"; "HTTP" for a method other than those the
//     conventions know: RFC 9110's, PATCH and QUERY, or those
//     OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS lists, see [New]), with
//     http.request.method, url.scheme, http.route and
//     http.response.status_code. When the context holds one (the service
//     wraps its mux with otelhttp, whose server span that is), it is an
//     internal "stripe webhook" span under it, and the HTTP attributes are
//     that span's: never a server span inside a server span.
//   - Per inbox attempt, a consumer span of the messaging operation
//     "process" (messaging.operation.type and messaging.operation.name):
//     "process {event type}" for an event (messaging.system "stripe"),
//     "process {task name}" for a task (messaging.system "idempotency",
//     the inbox's own), the event's type or the task's name its
//     messaging.destination.name (a topic, in the conventions' terms:
//     few values, Stripe's or the service's). Each is the root of a trace of
//     its own, linked to the span of the delivery that stored the event,
//     or to the span of the handler that enqueued the task (the delivery's
//     in synchronous mode, the event's attempt's in an inbox): its
//     traceparent is stored with the event or the task. The delivery's
//     span carries no messaging.operation.type: "receive" is a consumer's
//     pull, and Stripe pushes.
//   - Per fetch of a current object, a client span "stripe fetch", a
//     child of the handler's, with service.peer.name "stripe"; the
//     address, method and URL are the user's stripe-go client's, unknown
//     here.
//
// messaging.message.id is the event's id (a task's: its id) on every span
// that knows it; stripe.event.type, stripe.object.id, stripe.account (a
// connected account's event's: under Connect an object id such as
// card_payments repeats in every account), idempotency.outcome,
// idempotency.attempt, idempotency.redrives (an attempt's: how often its
// event or task was redriven, InboxRecord.Redrives), idempotency.kind,
// idempotency.state (an attempt's, once its end is recorded: none on the
// span of a worker that hung past its lease) and idempotency.fetch.result
// carry what the conventions do not. A span that ends in error has status Error and
// error.type: the HTTP status ("500") on the server span, the outcome
// ("failed", "unavailable") on the internal delivery span and on an
// attempt's, and on a fetch's the status of the Stripe API's answer,
// "timeout" or "_OTHER".
package idempotencyotel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed-a84bb619/idempotency"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
// The scope's version is the version of the library's module the binary
// was built with, as `go version -m` lists it (v0.4.0, or a
// pseudo-version); none when the build does not know one: a binary built
// in the library's own tree ("(devel)"), a test binary, or the module
// replaced by a directory, whose source may be anything.
const ScopeName = "github.com/seed-a84bb619/idempotency/otel"

// modulePath is the library's module, whose version is the scope's.
const modulePath = "github.com/seed-a84bb619/idempotency"

// scopeVersion is the scope's version: moduleVersion of this binary's
// build information, read once.
var scopeVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	return moduleVersion(info, ok)
})

// moduleVersion is the version of modulePath in a binary's build
// information (ok false: none), or "" (see ScopeName). A replacement by
// another module gives its version, one by a directory none.
func moduleVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return ""
	}
	m := &info.Main
	if m.Path != modulePath {
		i := slices.IndexFunc(info.Deps, func(d *debug.Module) bool { return d.Path == modulePath })
		if i < 0 || info.Deps[i] == nil {
			return ""
		}
		m = info.Deps[i]
	}
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "(devel)" {
		return ""
	}
	return m.Version
}

// Config configures [New]. The zero value uses OpenTelemetry's global
// providers.
type Config struct {
	// MeterProvider gives the meter of the metrics. Defaults to
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider

	// TracerProvider gives the tracer of the spans. Defaults to
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// Now is the clock the ages of the oldest pending event and of the
	// last attempt are measured on: the inbox's (InboxConfig.Now).
	// Defaults to time.Now.
	Now func() time.Time

	// Logger receives, at Warn, each collection of ObserveInbox's gauges
	// whose inbox query failed, with the store's error (no payload, no
	// secret). Defaults to slog.Default().
	Logger *slog.Logger

	// Attributes are added to every point of every metric the Telemetry
	// records, its counters', histograms' and ObserveInbox's gauges', and
	// to each of its spans: attribute.String("inbox", "billing") tells
	// apart the series (and the spans) of two inboxes (two stores, or two
	// schemas of one database) in one process, each observed by a
	// Telemetry of its own on one MeterProvider. Keep their values few, as
	// a metric's attribute's are: never an id. New refuses an attribute
	// with no key or no value, a key given twice, and the metrics' own
	// keys (outcome, status, kind, state, result, rows) and the spans'
	// (the package doc names them: messaging.system,
	// idempotency.outcome, ...), whose values the Telemetry's would
	// replace, and, as a Prometheus exporter writes keys (dots and other
	// characters as underscores), two keys written as one label and a
	// label Prometheus or the exporter writes itself (le, quantile,
	// otel_scope_*, __*), which failed every scrape or wrote a label
	// twice. New copies the slice.
	Attributes []attribute.KeyValue
}

// Telemetry turns what an [idempotency.Observer] is told into metrics and
// spans. It is safe for concurrent use. Make one with [New]: the zero
// Telemetry is not usable, its Observer and Pruner panic and its
// ObserveInbox fails, saying so.
type Telemetry struct {
	cfg      Config
	meter    metric.Meter
	tracer   trace.Tracer
	observer *idempotency.Observer
	// knownMethods are the HTTP methods the delivery's span reports as
	// they are (knownMethodsEnv), the others as _OTHER.
	knownMethods map[string]bool

	deliveries       metric.Int64Counter
	deliveryDuration metric.Float64Histogram
	attempts         metric.Int64Counter
	attemptDuration  metric.Float64Histogram
	deadLetters      metric.Int64Counter
	fetches          metric.Int64Counter
	fetchDuration    metric.Float64Histogram
	pruned           metric.Int64Counter
}

// deliveryAnswers are the outcomes and statuses a Handler answers (the
// README's Answers): idempotency.deliveries' series, each at 0 from the
// start. Queued is an inbox's Handler's, processed and skipped a
// synchronous one's; failed is 503 when the Stripe API failed a thin
// event's fetch or an OnCurrent fetch with a failure that may pass.
var deliveryAnswers = []struct {
	outcome idempotency.Outcome
	status  int
}{
	{idempotency.OutcomeProcessed, http.StatusOK},
	{idempotency.OutcomeDuplicate, http.StatusOK},
	{idempotency.OutcomeIgnored, http.StatusOK},
	{idempotency.OutcomeSkipped, http.StatusOK},
	{idempotency.OutcomeQueued, http.StatusOK},
	{idempotency.OutcomeRejected, http.StatusBadRequest},
	{idempotency.OutcomeRejected, http.StatusMethodNotAllowed},
	{idempotency.OutcomeRejected, http.StatusRequestEntityTooLarge},
	{idempotency.OutcomeFailed, http.StatusInternalServerError},
	{idempotency.OutcomeFailed, http.StatusServiceUnavailable},
	{idempotency.OutcomeUnavailable, http.StatusServiceUnavailable},
}

// durationBuckets are the histograms' bucket bounds, in seconds: from a
// fast memory-store delivery to a handler at its timeout.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New creates the instruments on cfg's meter, and reads once the HTTP
// methods the delivery's span knows from the environment variable
// OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS, as OpenTelemetry's HTTP
// conventions name it: a comma-separated list of case-sensitive methods
// ("GET,POST,PURGE"; white space around each is dropped) that replaces
// the default, RFC 9110's, PATCH and QUERY, whole: a method it does not
// list is reported as _OTHER. Empty or unset, the default. It fails when
// the meter refuses an instrument, or when the variable lists no method
// or an entry that is not one (a token of RFC 9110: not "GET;POST"),
// naming it.
func New(cfg Config) (*Telemetry, error) {
	return newTelemetry(cfg, scopeVersion())
}

// newTelemetry is New, its instrumentation scope at version.
func newTelemetry(cfg Config, version string) (*Telemetry, error) {
	known, err := knownMethodsFromEnv()
	if err != nil {
		return nil, err
	}
	if err := checkAttributes(cfg.Attributes); err != nil {
		return nil, err
	}
	cfg.Attributes = slices.Clone(cfg.Attributes)
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Telemetry{
		cfg:          cfg,
		knownMethods: known,
		meter:        cfg.MeterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(version)),
		tracer:       cfg.TracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(version), trace.WithSchemaURL(semconv.SchemaURL)),
	}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := t.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := t.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	t.deliveries = counter("idempotency.deliveries", "{delivery}", "Requests answered by the Stripe webhook Handler, by outcome and HTTP status.")
	t.deliveryDuration = histogram("idempotency.delivery.duration", "Time from a webhook request's arrival to its answer.")
	t.attempts = counter("idempotency.attempts", "{attempt}", "Inbox attempts at events and tasks, by outcome, kind and the state they left the row in.")
	t.attemptDuration = histogram("idempotency.attempt.duration", "Time an inbox attempt took.")
	t.deadLetters = counter("idempotency.dead_letters", "{row}", "Inbox attempts that dead-lettered their event or task.")
	t.fetches = counter("idempotency.stripe.fetches", "{fetch}", "Fetches of an object's current state from the Stripe API, by result.")
	t.fetchDuration = histogram("idempotency.stripe.fetch.duration", "Time a fetch from the Stripe API took.")
	t.pruned = counter("idempotency.retention.pruned", "{row}", "Rows a prune through Telemetry.Pruner deleted, and finished tasks whose arguments it cleared, by rows.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("idempotencyotel: creating instruments: %w", err)
	}
	// The dead letters' and the deliveries' series start at 0: a counter
	// series that first appears at 1 is missed by Prometheus's rate() and
	// increase(), so an alert on their growth would miss each process's
	// first dead letters, and one on the share of deliveries failed or
	// refused, its first failures and refusals.
	for _, k := range []idempotency.InboxKind{idempotency.KindEvent, idempotency.KindTask} {
		t.deadLetters.Add(context.Background(), 0, t.with(kindKey.String(string(k))))
	}
	for _, a := range deliveryAnswers {
		t.deliveries.Add(context.Background(), 0, t.with(outcomeKey.String(string(a.outcome)), statusKey.String(strconv.Itoa(a.status))))
	}
	t.observer = &idempotency.Observer{Delivery: t.delivery, Link: link, Attempt: t.attempt, Fetch: t.fetch}
	return t, nil
}

// Observer returns the Observer to set as Config.Observer and
// InboxConfig.Observer.
func (t *Telemetry) Observer() *idempotency.Observer {
	if err := t.made("Observer"); err != nil {
		panic(err) // a nil Observer would report nothing, silently
	}
	return t.observer
}

// made fails when t is not a Telemetry New returned, naming method.
func (t *Telemetry) made(method string) error {
	if t == nil || t.observer == nil {
		return fmt.Errorf("idempotencyotel: Telemetry.%s: a Telemetry not made by New", method)
	}
	return nil
}

// statsTimeout bounds the inbox query of one collection.
const statsTimeout = 5 * time.Second

// ObserveInbox registers the gauges of in: idempotency.inbox.depth by kind
// and state, idempotency.inbox.oldest_pending_age and
// idempotency.inbox.last_attempt_age (InboxStats.LastAttempt; left out of
// a collection while no row the inbox holds was attempted, a case
// oldest_pending_age covers: events wait and none is attempted), read
// from the database, and idempotency.inbox.running, this process's: 1
// while it runs Inbox.Run on in (Inbox.Running), else 0: observe the
// inbox in each process that runs Inbox.Run, as one that does not
// reports no running gauge. Events pending
// (depth kind=event; a snoozed task is pending, unattempted, until its
// snooze ends) and no process running: no worker runs; one running and a
// last attempt older than a few poll intervals: the workers cannot reach
// the database, or each pending event waits behind a failed one of its
// object; a recent one and the oldest pending age growing: the workers
// fall behind. Each collection (each scrape) asks in.Stats once, one
// short read-only transaction on PostgreSQL whose cost follows the rows
// still to apply, not the inbox's size (the depth of processed, skipped
// or ignored past 50,000 rows of a kind is PostgreSQL's estimate,
// InboxStats.Estimated; dead letters are always counted);
// a failed query is logged at Warn through Config.Logger, once per
// collection, and
// the gauges it reads are left out of that collection, running alone
// reported (the collection itself does
// not fail: OpenTelemetry's error handler would print the error again,
// outside the service's log). Unregister the returned registration to
// stop; the Telemetry may then observe another inbox. A Telemetry
// observes one inbox at a time: while a registration is registered,
// ObserveInbox fails, registering nothing, as the second inbox's gauges
// would be the first's series; so it does for another Telemetry on the
// same MeterProvider with the same Config.Attributes. A process with two
// inboxes (two stores, or two schemas of one database) makes a Telemetry
// for each on one MeterProvider, with Config.Attributes naming the
// inbox: reported as one series, a collection would keep one inbox's
// gauges, the other's lost; on two MeterProviders behind one Prometheus
// registry, the scrape fails on each series served twice. It fails,
// registering nothing, for an Inbox idempotency.NewInbox did not return
// (a nil or zero one).
func (t *Telemetry) ObserveInbox(in *idempotency.Inbox) (metric.Registration, error) {
	if err := t.made("ObserveInbox"); err != nil {
		return nil, err
	}
	switch {
	case in == nil:
		return nil, errors.New("idempotencyotel: ObserveInbox: nil *Inbox")
	case in.MaxAttempts() == 0:
		// A zero Inbox (NewInbox sets at least 1), whose Stats would fail
		// at every collection.
		return nil, errors.New("idempotencyotel: ObserveInbox: an Inbox not made by idempotency.NewInbox")
	}
	depth, depthErr := t.meter.Int64ObservableGauge("idempotency.inbox.depth", metric.WithUnit("{row}"),
		metric.WithDescription("Inbox events and tasks by state."))
	age, ageErr := t.meter.Float64ObservableGauge("idempotency.inbox.oldest_pending_age", metric.WithUnit("s"),
		metric.WithDescription("Time since the oldest inbox event or task still to apply (pending, failed or processing) was received; 0 when none."))
	lastAttempt, lastAttemptErr := t.meter.Float64ObservableGauge("idempotency.inbox.last_attempt_age", metric.WithUnit("s"),
		metric.WithDescription("Time since the newest attempt at an inbox event or task started; none when no row was attempted."))
	running, runningErr := t.meter.Int64ObservableGauge("idempotency.inbox.running", metric.WithUnit("{process}"),
		metric.WithDescription("1 while this process runs Inbox.Run on the inbox, else 0."))
	if err := errors.Join(depthErr, ageErr, lastAttemptErr, runningErr); err != nil {
		return nil, fmt.Errorf("idempotencyotel: creating instruments: %w", err)
	}
	key := t.seriesKey()
	observed.Lock()
	defer observed.Unlock()
	switch owner := observed.by[key]; {
	case owner == t:
		return nil, errors.New("idempotencyotel: ObserveInbox: this Telemetry observes an inbox already, whose series another would share: " +
			"make a Telemetry for each inbox, naming it in Config.Attributes, or unregister the first")
	case owner != nil:
		return nil, errors.New("idempotencyotel: ObserveInbox: another Telemetry on this MeterProvider, with the same Config.Attributes, observes an inbox, whose series this one's would share: " +
			"name each inbox in Config.Attributes")
	}
	reg, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		// This process's, read before the database: reported while the
		// inbox cannot be read too.
		var run int64
		if in.Running() {
			run = 1
		}
		o.ObserveInt64(running, run, t.with())
		statsCtx, cancel := context.WithTimeout(ctx, statsTimeout)
		defer cancel()
		st, err := in.Stats(statsCtx)
		if err != nil {
			// The service's log, not OpenTelemetry's error handler, which
			// writes a plain line through package log: once, here. The
			// store's error quotes no payload (the query has none) and no
			// secret (pgx leaves the password out of its errors).
			t.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "idempotencyotel: cannot read the inbox's stats; its gauges are left out of this collection",
				slog.String("error", err.Error()))
			return nil
		}
		for state := range st.Counts {
			o.ObserveInt64(depth, int64(st.Events(state)), t.with(kindKey.String(string(idempotency.KindEvent)), stateKey.String(string(state))))
			if !idempotency.KindTask.CanBe(state) {
				continue // no series that is 0 for good
			}
			o.ObserveInt64(depth, int64(st.TaskCounts[state]), t.with(kindKey.String(string(idempotency.KindTask)), stateKey.String(string(state))))
		}
		var seconds float64
		if !st.OldestPending.IsZero() {
			seconds = t.since(st.OldestPending)
		}
		o.ObserveFloat64(age, seconds, t.with())
		if !st.LastAttempt.IsZero() {
			o.ObserveFloat64(lastAttempt, t.since(st.LastAttempt), t.with())
		}
		return nil
	}, depth, age, lastAttempt, running)
	if err != nil {
		return nil, err
	}
	if observed.by == nil {
		observed.by = map[seriesKey]*Telemetry{}
	}
	observed.by[key] = t
	return &inboxRegistration{Registration: reg, key: key}, nil
}

// observed holds, for each series an inbox's gauges are reported as, the
// Telemetry whose registration of ObserveInbox reports them: a second
// inbox's would share them (the same Telemetry, or another on the same
// MeterProvider with the same Config.Attributes), a collection keeping
// one inbox's gauges, the other's lost.
var observed struct {
	sync.Mutex
	by map[seriesKey]*Telemetry
}

// seriesKey names the series of a Telemetry's inbox gauges: its
// MeterProvider and its Config.Attributes. A provider whose type cannot
// be a map key (no SDK's is such) is told apart by its Telemetry alone.
type seriesKey struct {
	provider any
	attrs    attribute.Distinct
}

func (t *Telemetry) seriesKey() seriesKey {
	var provider any = t
	if p := t.cfg.MeterProvider; reflect.TypeOf(p).Comparable() {
		provider = p
	}
	attrs := attribute.NewSet(t.cfg.Attributes...)
	return seriesKey{provider: provider, attrs: attrs.Equivalent()}
}

// inboxRegistration is what ObserveInbox returns: its series may be
// another inbox's once it is unregistered.
type inboxRegistration struct {
	metric.Registration
	key  seriesKey
	once sync.Once
}

func (r *inboxRegistration) Unregister() error {
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	r.once.Do(func() {
		observed.Lock()
		defer observed.Unlock()
		delete(observed.by, r.key)
	})
	return nil
}

// since is the seconds from at to the clock's now, never negative: a
// replica's clock may be ahead of this one's.
func (t *Telemetry) since(at time.Time) float64 {
	return max(t.cfg.Now().Sub(at).Seconds(), 0)
}

// The attributes of the metrics: few values each, so that series stay few.
var (
	outcomeKey = attribute.Key("outcome")
	statusKey  = attribute.Key("status")
	kindKey    = attribute.Key("kind")
	stateKey   = attribute.Key("state")
	resultKey  = attribute.Key("result")
	rowsKey    = attribute.Key("rows")
)

// metricKeys are the metrics' own attribute keys, which Config.Attributes
// may not name.
var metricKeys = []attribute.Key{outcomeKey, statusKey, kindKey, stateKey, resultKey, rowsKey}

// checkAttributes is New's check of Config.Attributes.
func checkAttributes(attrs []attribute.KeyValue) error {
	seen := map[attribute.Key]bool{}
	labels := map[string]attribute.Key{} // Prometheus label → the key written so
	for _, kv := range attrs {
		label := promLabel(kv.Key)
		switch {
		case !kv.Key.Defined() || kv.Value.Type() == attribute.EMPTY:
			return fmt.Errorf("idempotencyotel: Config.Attributes: an attribute with no key or no value (%q)", string(kv.Key))
		case seen[kv.Key]:
			return fmt.Errorf("idempotencyotel: Config.Attributes: %q twice", string(kv.Key))
		case slices.Contains(metricKeys, kv.Key):
			return fmt.Errorf("idempotencyotel: Config.Attributes: %q is an attribute of the metrics' own", string(kv.Key))
		case slices.Contains(spanKeys, kv.Key):
			return fmt.Errorf("idempotencyotel: Config.Attributes: %q is an attribute of the spans' own", string(kv.Key))
		case label == "le" || label == "quantile" || strings.HasPrefix(label, "__") || strings.HasPrefix(label, "otel_scope_"):
			return fmt.Errorf("idempotencyotel: Config.Attributes: %q is a label Prometheus or its exporter writes itself (%s)", string(kv.Key), label)
		case labels[label] != "":
			return fmt.Errorf("idempotencyotel: Config.Attributes: %q and %q are one Prometheus label, %s", string(labels[label]), string(kv.Key), label)
		}
		seen[kv.Key], labels[label] = true, kv.Key
	}
	return nil
}

// promLabel is the label a Prometheus exporter writes for the attribute
// key k: each character outside [a-zA-Z0-9_] an underscore (a leading
// digit is prefixed with one, which none of the checks above reads).
func promLabel(k attribute.Key) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, string(k))
}

// with is the measurement option of a metric's point: its attributes
// kvs, and Config.Attributes.
func (t *Telemetry) with(kvs ...attribute.KeyValue) metric.MeasurementOption {
	if len(t.cfg.Attributes) == 0 {
		return metric.WithAttributes(kvs...)
	}
	return metric.WithAttributes(append(kvs[:len(kvs):len(kvs)], t.cfg.Attributes...)...)
}

// The attributes of the spans that OpenTelemetry's conventions do not
// name (the others are semconv's).
var (
	eventTypeKey = attribute.Key("stripe.event.type")
	objectIDKey  = attribute.Key("stripe.object.id")
	accountKey   = attribute.Key("stripe.account")
	spanOutcome  = attribute.Key("idempotency.outcome")
	spanAttempt  = attribute.Key("idempotency.attempt")
	spanRedrives = attribute.Key("idempotency.redrives")
	spanKind     = attribute.Key("idempotency.kind")
	spanState    = attribute.Key("idempotency.state")
	spanResult   = attribute.Key("idempotency.fetch.result")
)

// spanKeys are the spans' own attribute keys, which Config.Attributes may
// not name.
var spanKeys = []attribute.Key{
	semconv.HTTPRequestMethodKey, semconv.URLSchemeKey, semconv.HTTPRouteKey, semconv.HTTPResponseStatusCodeKey,
	semconv.MessagingOperationTypeKey, semconv.MessagingOperationNameKey, semconv.MessagingMessageIDKey,
	semconv.MessagingSystemKey, semconv.MessagingDestinationNameKey, semconv.ErrorTypeKey, semconv.ServicePeerNameKey,
	eventTypeKey, objectIDKey, accountKey, spanOutcome, spanAttempt, spanRedrives, spanKind, spanState, spanResult,
}

// The messaging systems of the attempts' spans (messaging.system, a custom
// value): Stripe's, whose webhooks deliver the events, and the inbox's
// own, to which a handler enqueues its tasks.
const (
	systemStripe = "stripe"
	systemTasks  = "idempotency"
)

// opProcess is the operation of an attempt's span: its
// messaging.operation.type and messaging.operation.name.
const opProcess = "process"

// kindOf names a row's kind; a Result of an event attempt has none.
func kindOf(k idempotency.InboxKind) string {
	if k == "" {
		return string(idempotency.KindEvent)
	}
	return string(k)
}

// defaultKnownMethods are the methods OpenTelemetry's HTTP conventions
// know by default, semconv's values of http.request.method: RFC 9110's,
// PATCH and QUERY.
var defaultKnownMethods = func() map[string]bool {
	known := map[string]bool{}
	for _, m := range []attribute.KeyValue{
		semconv.HTTPRequestMethodConnect, semconv.HTTPRequestMethodDelete, semconv.HTTPRequestMethodGet,
		semconv.HTTPRequestMethodHead, semconv.HTTPRequestMethodOptions, semconv.HTTPRequestMethodPatch,
		semconv.HTTPRequestMethodPost, semconv.HTTPRequestMethodPut, semconv.HTTPRequestMethodTrace,
		semconv.HTTPRequestMethodQuery,
	} {
		known[m.Value.AsString()] = true
	}
	return known
}()

// knownMethodsEnv is the environment variable, named by OpenTelemetry's
// HTTP conventions, that replaces the HTTP methods the delivery's span
// knows (the package doc and New say how).
const knownMethodsEnv = "OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS"

// knownMethodsFromEnv is the methods knownMethodsEnv lists, or
// defaultKnownMethods when it is empty or unset.
func knownMethodsFromEnv() (map[string]bool, error) {
	list := os.Getenv(knownMethodsEnv)
	if strings.TrimSpace(list) == "" {
		return defaultKnownMethods, nil
	}
	known := map[string]bool{}
	for m := range strings.SplitSeq(list, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !isToken(m) {
			return nil, fmt.Errorf("idempotencyotel: %s: %q is not an HTTP method (a token of RFC 9110)", knownMethodsEnv, m)
		}
		known[m] = true
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("idempotencyotel: %s lists no HTTP method: leave it empty or unset for the conventions' methods", knownMethodsEnv)
	}
	return known, nil
}

// isToken reports whether s is a token of RFC 9110, as a method is: one
// or more visible ASCII characters, none a delimiter.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// knownMethod is m when it is one of t's known methods, and "_OTHER" when
// not, as OpenTelemetry's HTTP conventions ask: the method is the
// sender's, unverified, and may be up to a header's size (which is also
// why http.request.method_original is not set).
func (t *Telemetry) knownMethod(m string) string {
	if t.knownMethods[m] {
		return m
	}
	return "_OTHER"
}

// route is http.route of a request a ServeMux routed by pattern: the
// pattern's path, without its method and host; "" when no ServeMux did.
func route(pattern string) string {
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		return pattern[i:]
	}
	return ""
}

// delivery is Observer.Delivery: a span for the request, and the
// delivery's metrics when it is answered. The span is the request's server
// span when ctx holds none of this process's (nothing traced the request
// before the Handler, or only its traceparent was read), an internal span
// under that span when it does (otelhttp's): never a server span inside a
// server span.
func (t *Telemetry) delivery(ctx context.Context, r *http.Request) (context.Context, func(idempotency.Result)) {
	parent := trace.SpanContextFromContext(ctx)
	server := !parent.IsValid() || parent.IsRemote()
	name, kind := "stripe webhook", trace.SpanKindInternal
	var attrs []attribute.KeyValue
	if server {
		method, scheme, path := t.knownMethod(r.Method), "http", route(r.Pattern)
		if r.TLS != nil {
			scheme = "https"
		}
		// OpenTelemetry's HTTP server span: "{method} {route}", "HTTP" for
		// a method that is none of HTTP's. No url.path: the sender's,
		// unverified, and of any length when the route is a prefix.
		name = method
		if method == "_OTHER" {
			name = "HTTP"
		}
		kind = trace.SpanKindServer
		attrs = []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.URLScheme(scheme)}
		if path != "" {
			name += " " + path
			attrs = append(attrs, semconv.HTTPRoute(path))
		}
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(append(attrs, t.cfg.Attributes...)...))
	return ctx, func(res idempotency.Result) {
		outcome := outcomeKey.String(string(res.Outcome))
		t.deliveries.Add(ctx, 1, t.with(outcome, statusKey.String(strconv.Itoa(res.Status))))
		t.deliveryDuration.Record(ctx, res.Duration.Seconds(), t.with(outcome))
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs, spanOutcome.String(string(res.Outcome)))
		if server {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(res.Status))
		}
		attrs = eventAttrs(attrs, res)
		if res.Status >= http.StatusInternalServerError {
			// A 4xx is the sender's fault, not the server's (OpenTelemetry's
			// HTTP server convention). The server span names the error by
			// its status, as the convention does; the internal one by the
			// outcome, its own vocabulary.
			errorType := string(res.Outcome)
			if server {
				errorType = strconv.Itoa(res.Status)
			}
			attrs = append(attrs, semconv.ErrorTypeKey.String(errorType))
			span.SetStatus(codes.Error, string(res.Outcome))
		}
		span.SetAttributes(attrs...)
		span.End()
	}
}

// eventAttrs appends the ids of res's event to attrs, those known.
func eventAttrs(attrs []attribute.KeyValue, res idempotency.Result) []attribute.KeyValue {
	if res.EventID != "" {
		attrs = append(attrs, semconv.MessagingMessageID(res.EventID), eventTypeKey.String(res.EventType))
	}
	if res.ObjectID != "" {
		attrs = append(attrs, objectIDKey.String(res.ObjectID))
	}
	if res.Account != "" {
		attrs = append(attrs, accountKey.String(res.Account))
	}
	return attrs
}

// traceContext is the W3C propagator that writes and reads the links.
var traceContext propagation.TraceContext

// link is Observer.Link: the traceparent of ctx's span, the delivery's.
func link(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent")
}

// linkOf is the span context a stored link names, if it is valid.
func linkOf(s string) (trace.SpanContext, bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// attempt is Observer.Attempt: a consumer span in a trace of its own,
// linked to the delivery's span, and the attempt's metrics when it ends.
// The span is a messaging "process" span: "process {event type}" for an
// event, "process {task name}" for a task, the event's type or the task's
// name its destination.
func (t *Telemetry) attempt(ctx context.Context, rec idempotency.InboxRecord, stored string) (context.Context, func(idempotency.Result)) {
	system := systemStripe
	attrs := []attribute.KeyValue{
		semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName(opProcess),
		semconv.MessagingMessageID(rec.EventID), spanAttempt.Int(rec.Attempt), spanRedrives.Int(rec.Redrives),
		spanKind.String(kindOf(rec.Kind)),
	}
	if rec.Kind == idempotency.KindTask {
		system = systemTasks // a task's EventType is its name, not a Stripe event's type
	} else {
		attrs = append(attrs, eventTypeKey.String(rec.EventType))
	}
	attrs = append(attrs, semconv.MessagingSystemKey.String(system))
	name := opProcess
	if rec.EventType != "" {
		name += " " + rec.EventType
		attrs = append(attrs, semconv.MessagingDestinationName(rec.EventType))
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...),
	}
	if rec.ObjectID != "" {
		opts = append(opts, trace.WithAttributes(objectIDKey.String(rec.ObjectID)))
	}
	if rec.Account != "" {
		opts = append(opts, trace.WithAttributes(accountKey.String(rec.Account)))
	}
	if sc, ok := linkOf(stored); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	if len(t.cfg.Attributes) > 0 {
		opts = append(opts, trace.WithAttributes(t.cfg.Attributes...))
	}
	ctx, span := t.tracer.Start(ctx, name, opts...)
	return ctx, func(res idempotency.Result) {
		outcome, kind := outcomeKey.String(string(res.Outcome)), kindKey.String(kindOf(res.Kind))
		// A worker that hung past its lease and came back, or could not
		// record its end: the lease that found its lease expired counts
		// that attempt, taking it over or dead-lettering it.
		counted := res.State == "" && errors.Is(res.Err, idempotency.ErrLeaseExpired)
		if !counted {
			t.attempts.Add(ctx, 1, t.with(outcome, kind, stateKey.String(string(res.State))))
			t.attemptDuration.Record(ctx, res.Duration.Seconds(), t.with(outcome, kind))
		}
		if res.State == idempotency.InboxDeadLetter {
			t.deadLetters.Add(ctx, 1, t.with(kind))
		}
		span.SetAttributes(spanOutcome.String(string(res.Outcome)))
		if res.State != "" { // none for an end not recorded: the lease that finds it expired records it
			span.SetAttributes(spanState.String(string(res.State)))
		}
		if res.Outcome == idempotency.OutcomeFailed || res.Outcome == idempotency.OutcomeUnavailable {
			span.SetAttributes(semconv.ErrorTypeKey.String(string(res.Outcome)))
			span.SetStatus(codes.Error, string(res.Outcome))
		}
		span.End()
	}
}

// The results of a fetch.
const (
	fetchOK       = "ok"
	fetchNotFound = "not_found"
	fetchError    = "error"
)

// fetchErrorType is the error.type of a failed fetch: the status of the
// Stripe API's answer when err holds one (a *stripe.Error), "timeout" when
// the context's deadline passed, and "_OTHER" otherwise; never err's text.
func fetchErrorType(err error) string {
	var se *stripe.Error
	switch {
	case errors.As(err, &se) && se.HTTPStatusCode != 0:
		return strconv.Itoa(se.HTTPStatusCode)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// fetch is Observer.Fetch: a client span over the fetch, a child of the
// handler's, and the fetch's metrics. The span's remote service is
// Stripe's (service.peer.name); the address, the method and the URL are
// the user's stripe-go client's, unknown here.
func (t *Telemetry) fetch(ctx context.Context, eventType, objectID string, d time.Duration, err error) {
	result := fetchOK
	switch {
	case errors.Is(err, idempotency.ErrObjectNotFound):
		result = fetchNotFound
	case err != nil:
		result = fetchError
	}
	attrs := t.with(resultKey.String(result))
	t.fetches.Add(ctx, 1, attrs)
	t.fetchDuration.Record(ctx, d.Seconds(), attrs)
	end := time.Now()
	_, span := t.tracer.Start(ctx, "stripe fetch", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(end.Add(-d)),
		trace.WithAttributes(append([]attribute.KeyValue{semconv.ServicePeerName(systemStripe), eventTypeKey.String(eventType),
			objectIDKey.String(objectID), spanResult.String(result)}, t.cfg.Attributes...)...))
	if result == fetchError {
		span.SetAttributes(semconv.ErrorTypeKey.String(fetchErrorType(err)))
		span.SetStatus(codes.Error, result)
	}
	span.End(trace.WithTimestamp(end))
}

// prunedRows name PruneReport's counts in idempotency.retention.pruned's
// rows attribute, as idemctl prune -json and PruneEvery's log name them;
// prunedCounts gives them in this order.
var prunedRows = [...]string{"event_ids", "events", "dead_letters", "guards", "tasks", "objects", "task_args_cleared"}

func prunedCounts(r idempotency.PruneReport) [len(prunedRows)]int {
	return [...]int{r.EventIDs, r.Events, r.DeadLetters, r.Guards, r.Tasks, r.Objects, r.TaskArgsCleared}
}

// Pruner returns p counting in idempotency.retention.pruned what each of
// its prunes deletes, by the rows attribute (PruneReport's counts:
// event_ids, events, dead_letters, guards, tasks, objects, and
// task_args_cleared, the finished tasks whose arguments were cleared,
// their rows kept): give it to [idempotency.PruneEvery] in place of the
// store. It counts each batch as it commits (Retention.OnBatch, which it
// calls in turn when set), so that a long prune's rows show as they go,
// and what the report counts beyond them when the prune returns; a dry
// run counts nothing. Each series starts at 0, so that Prometheus's
// increase() sees the first prune after the process's first scrape.
// PruneEvery's own first prune runs at once as it starts, usually
// before the process's first scrape: what it has deleted by then is the
// series' first value, which increase() does not count (the counter's
// value and PruneEvery's log line show it). A nil p, or a nil pointer of a store
// type, gives nil, which PruneEvery refuses as it refuses the store.
func (t *Telemetry) Pruner(p idempotency.Pruner) idempotency.Pruner {
	if err := t.made("Pruner"); err != nil {
		panic(err)
	}
	if v := reflect.ValueOf(p); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	for _, rows := range prunedRows {
		t.pruned.Add(context.Background(), 0, t.with(rowsKey.String(rows)))
	}
	return countingPruner{p: p, t: t}
}

// countingPruner is what Telemetry.Pruner returns.
type countingPruner struct {
	p idempotency.Pruner
	t *Telemetry
}

func (c countingPruner) Prune(ctx context.Context, r idempotency.Retention) (idempotency.PruneReport, error) {
	if r.DryRun {
		return c.p.Prune(ctx, r)
	}
	var mu sync.Mutex // a Pruner other than the stores may call OnBatch on another goroutine
	var counted [len(prunedRows)]int
	count := func(rep idempotency.PruneReport) {
		mu.Lock()
		defer mu.Unlock()
		for i, n := range prunedCounts(rep) {
			if n > counted[i] {
				c.t.pruned.Add(ctx, int64(n-counted[i]), c.t.with(rowsKey.String(prunedRows[i])))
				counted[i] = n
			}
		}
	}
	onBatch := r.OnBatch
	r.OnBatch = func(rep idempotency.PruneReport) {
		count(rep)
		if onBatch != nil {
			onBatch(rep)
		}
	}
	rep, err := c.p.Prune(ctx, r)
	count(rep) // a failed prune's report counts the batches it committed
	return rep, err
}
