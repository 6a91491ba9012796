package idempotency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// Config configures a [Handler]. Every field but Secrets has a default;
// [NewHandler] validates every field and names the one at fault: a
// negative duration or size is refused, as is what a field's doc says.
type Config struct {
	// Secrets are the endpoint signing secrets (whsec_...). A delivery is
	// verified when any v1 signature in its header matches any of them: list
	// the old and the new secret while rolling one, or the secrets of several
	// endpoints that share the route. Required: at least one, and each
	// neither empty, nor with white space at its ends (a line end read
	// from a file would fail every signature) or a quote (an env file
	// read with its quotes kept, as docker's --env-file does), nor a
	// Stripe API key (sk_live_..., sk_test_..., and the rk_ and pk_ ones
	// alike). The slice is copied.
	Secrets []string

	// Tolerance is how far the signature's timestamp may lie from this
	// machine's clock, in the past or in the future. Defaults to 5 minutes;
	// negative is refused, and so is one over [RecoveryWindow] (30 days):
	// a signature must not verify for as long as an event's claim is kept
	// (Retention.EventIDs, 45 days at least), or a delivery sent again
	// once its claim was pruned would be applied again.
	Tolerance time.Duration

	// MaxBodyBytes limits the request body; a larger one is answered 413.
	// Real invoice events exceed 64 KiB. Defaults to 1 MiB; negative is
	// refused. It does not
	// limit the events [Handler.Recover] lists from the Events API, nor the
	// time a body takes to arrive: the http.Server's ReadTimeout does.
	MaxBodyBytes int64

	// Timeout bounds the claim and the handler's transaction. The context
	// is detached from the request, so a sender that hangs up does not cut a
	// transaction short; the timeout does, and the delivery is answered 500.
	// A thin event notification's fetch of its event (StripeClient), and
	// before it the look-up of whether the store holds the event already,
	// come before them, within a Timeout of their own: its answer can
	// take up to twice Timeout.
	// Defaults to 10 seconds: Stripe treats a slow answer as a failed
	// delivery and sends the event again, so answer well before it gives up.
	// Negative is refused.
	Timeout time.Duration

	// APIVersion is the Stripe API version the handlers' types are written
	// for (yyyy-mm-dd.train, or yyyy-mm-dd for a version from before
	// 2024-09-30.acacia, whose events must then carry that exact version).
	// Events of another release train are logged once per version, with
	// both versions named, and decoded best-effort; StrictAPIVersion
	// rejects them. Defaults to stripe.APIVersion of the stripe-go the
	// program is built with. Text of another form (white space, a line
	// end, a train with a dot in it, a date that is none) is refused.
	APIVersion string

	// StrictAPIVersion rejects (400) events whose API version belongs to
	// another release train than APIVersion, unless no handler would decode
	// them: events with no handler are answered ignored, and those of
	// [OnCurrent]'s types, whose handlers are given the object fetched from
	// the API, are applied, and those the store holds already (applied or,
	// in inbox mode, stored from a copy of another version, as Stripe sends
	// each event to both endpoints while an endpoint moves to another
	// version), which are answered duplicate. By default such events are
	// accepted, decoded best-effort, and logged once per version: rejecting
	// them means days of retries and, in the end, a disabled endpoint.
	StrictAPIVersion bool

	// DisableFastDecoder decodes data.object with encoding/json alone. By
	// default a decoder compiled per handler type gives encoding/json's
	// result several times faster, and hands encoding/json whatever it
	// does not decode itself; this is the way out should it ever be in
	// doubt. Defaults to false. In inbox mode the workers decode, as
	// InboxConfig.DisableFastDecoder says; Inbox.Handler refuses this
	// field set without that one.
	DisableFastDecoder bool

	// RecordIgnored stores the claim of events that have no handler, with
	// outcome ignored, so that the ledger lists every delivery. Such a
	// claim answers a later delivery of the event duplicate, also once a
	// handler for its type is added: to apply it then, Forget it first.
	// An [Inbox.Handler] stores the event's inbox row as ignored instead,
	// with its payload, and no claim: Inbox.List lists it, the ledger
	// (LookupEvent, ListEvents) does not, and the row answers later
	// deliveries duplicate in the same way; once a handler for its type
	// is added, Inbox.Redrive (RedriveFilter.States ignored) has it
	// applied.
	// Defaults to false: ignored events touch no store, and a handler
	// added later applies the event's next delivery.
	RecordIgnored bool

	// Logger receives one record per delivery: event id, type, object id,
	// outcome, status and duration, a skip's reason, and a failure's
	// error (a stripe-go error the handler's wraps by its status, type,
	// codes and request id, not its JSON), never the payload or a secret.
	// Processed, skipped and (by an inbox's Handler) queued events log at
	// Info, duplicates and ignored events at Debug, rejections at Warn,
	// failures at Error, and so does a processed event whose AfterCommit
	// func panicked. Defaults to slog.Default(); an [Inbox.Handler]'s, to
	// InboxConfig.Logger.
	Logger *slog.Logger

	// OnResult, when set, is called once per delivery after the answer is
	// written, on the request's goroutine: the place for metrics. It must
	// not block. A panic in it is logged, at Error, and goes no further.
	OnResult func(Result)

	// Observer, when set, watches each delivery (Observer.Delivery), gives
	// the link stored with each event in inbox mode and with each task a
	// handler run in the request enqueues (Observer.Link), and watches the
	// Stripe API fetches of OnCurrent handlers run in the request
	// (Observer.Fetch): the hooks of metrics and traces, such as
	// the subpackage otel's. Defaults to nil: nothing is observed; an
	// [Inbox.Handler]'s, to InboxConfig.Observer. The Handler keeps the
	// pointer, not a copy: set the funcs before NewHandler and leave them.
	// Whether Fetch or Link is set is read there, once; changing a func
	// while deliveries run is a data race.
	Observer *Observer

	// StripeClient, when set, fetches the full event of each thin (v2)
	// event notification that an event destination sends: the
	// notification is verified, the event is fetched from
	// GET /v2/core/events/{id} (as the notification's context, with
	// Stripe-Context) within Timeout, and then claimed by its id and applied
	// or stored like a snapshot event, within another Timeout (the answer
	// takes up to twice Timeout); see [Handler] for what its handler
	// receives. A fetch that fails answers 503 (network, timeout, 429,
	// 5xx) or 500 (any other refusal), so Stripe sends the notification
	// again; the error of an event not found (404 resource_missing) names
	// the context it was fetched as and asks whether the key is of the
	// event destination's account and the event's mode. A notification
	// of a type with no handler is answered ignored
	// without a fetch, unless RecordIgnored records it, and one of an
	// event the store holds already (its claim, or in inbox mode its
	// inbox row) is answered duplicate without one: neither Stripe's
	// redeliveries nor copies of a captured notification sent again
	// spend the account's API rate limit. Nil answers thin
	// notifications 400, as [ErrThinEvent] says. A client stripe.NewClient
	// did not make (a zero stripe.Client) is refused.
	StripeClient *stripe.Client

	// Mode is the mode of the endpoint's events, ModeLive or ModeTest:
	// a delivery of the other mode (its livemode) is refused (400, with
	// [ErrModeMismatch]; nothing is stored), and so is a thin event whose
	// notification or fetched event is of the other mode. Stripe sends an
	// endpoint only its own mode's events: one of the other means a test
	// and a live endpoint share the route and its secrets, or a delivery
	// sent where it was not meant to go. A StripeClient whose API key's
	// prefix names the other mode (sk_test_ or rk_test_ for ModeLive,
	// sk_live_ or rk_live_ for ModeTest), whose fetches would find none of
	// the endpoint's events and objects, is refused with
	// [ErrModeMismatch], the key not quoted. [Handler.Recover] refuses a
	// client whose API key is of the other mode, before any request, and
	// stops at the first listed event of the other mode. It is checked
	// when an event is received: an [Inbox]'s workers apply what the
	// inbox holds, also an event of the other mode stored before Mode
	// was set (or by a replica without it), redriven or not. Defaults to
	// "", nothing checked: an event of either mode is applied.
	Mode Mode

	// Now is the clock of what a synchronous Handler records: when a
	// delivery was received, and when the tasks its handler enqueues come
	// due. An [Inbox.Handler] does not use it: the inbox's clock
	// (InboxConfig.Now) dates what it stores, and its workers apply. The
	// signature's timestamp is always checked against the real time.
	// Defaults to time.Now.
	Now func() time.Time
}

// Mode is the mode of a Stripe endpoint and its events: live, or test (a
// sandbox, or an account's test mode), as an event's livemode and an API
// key's prefix (sk_live_, sk_test_) tell. The zero Mode checks nothing.
type Mode string

// The modes of Config.Mode.
const (
	ModeLive Mode = "live" // livemode true; API keys sk_live_..., rk_live_...
	ModeTest Mode = "test" // livemode false; API keys sk_test_..., rk_test_...
)

// modeOf is the mode of an event whose livemode is livemode.
func modeOf(livemode bool) Mode {
	if livemode {
		return ModeLive
	}
	return ModeTest
}

// checkKeyMode refuses, with ErrModeMismatch, a client whose API key's
// prefix names another mode than mode, an empty mode or a key whose
// prefix names none taken. Its error names field, never the key.
func checkKeyMode(field string, c *stripe.Client, mode Mode) error {
	if m := Mode(stripeapi.KeyMode(c.V1Events.Key)); mode != "" && m != "" && m != mode {
		return errorf("%w: %s has a %s-mode API key, which reaches %s-mode events and objects only, and Config.Mode is %s: use a key of the endpoint's mode",
			ErrModeMismatch, field, m, m, mode)
	}
	return nil
}

// checkMode refuses an event of another mode than Config.Mode.
func (h *Handler) checkMode(env *envelope.Envelope) error {
	if m := h.cfg.Mode; m != "" && modeOf(env.Livemode) != m {
		return errorf("%w: event %s is a %s-mode event (livemode %t), Config.Mode is %s",
			ErrModeMismatch, env.ID, modeOf(env.Livemode), env.Livemode, m)
	}
	return nil
}

// Result describes one delivery, for Config.OnResult, or one inbox
// attempt at an event or a task, for InboxConfig.OnResult; the Observer's
// done funcs are given it too.
type Result struct {
	EventID   string // empty when the request was rejected before parsing
	EventType string
	ObjectID  string
	// Account is the event's connected account (Event.Account), logged
	// as account: a capability's id, card_payments, is the same in every
	// account. Empty for the platform's own events and for a task.
	Account string
	Outcome Outcome
	Status  int // the HTTP status answered
	// Duration is, for a delivery, from the request's arrival to the
	// answer; for an inbox attempt, the attempt's, and for one whose
	// lease expired with its end not recorded (ErrLeaseExpired: its worker
	// died or hung), from its start to the lease that reported it: the
	// attempt that took it over, as it started, or the lease that
	// dead-lettered it.
	Duration time.Duration
	// State is, for an inbox attempt, the state the attempt left the event
	// or task in (InboxDeadLetter when it was the last); empty for a
	// delivery, and when the attempt's end could not be recorded.
	State InboxState
	// Err is why the delivery failed or was rejected, or why the attempt
	// failed; nil when the delivery was answered 200, or the attempt
	// succeeded, skipped, snoozed or ended ignored (Outcome ignored is no
	// failure: why a worker recorded an event ignored is IgnoredReason).
	// It is for logs and metrics, never sent to the client.
	Err error
	// SkipReason is, when Outcome is skipped (a delivery, an inbox
	// attempt, a task's attempt), the reason the handler or the task gave
	// [Skip], as the store keeps it: a NUL byte or invalid UTF-8
	// replaced, "no reason given" for none, at most its first 1000 bytes
	// (a rune cut in half there dropped). A task's is its
	// InboxRecord.LastError (also when recording it failed: State is
	// then empty); an event's is its EventRecord.SkipReason. Empty
	// otherwise. Logged as skip_reason. The library puts no payload in
	// it (Skip asks the handler to keep payload data out of its reason).
	// It is free text, as varied as the ids handlers write into it: keep
	// it out of metric attributes, where each value is a series
	// (idempotencyotel's metrics have none).
	SkipReason string
	// IgnoredReason is, when an inbox worker records an event ignored,
	// why: no handler for its type in a process within
	// InboxConfig.RetryUnhandledFor after a receiver that had one stored
	// it. It is the event's InboxRecord.LastError, worded by the library
	// (its type and the window, never the payload), at most 1000 bytes,
	// and logged as ignored_reason, at Warn, once recorded (State
	// InboxIgnored). When the record failed (State empty: the event is
	// attempted again, as after any attempt whose end was not recorded)
	// it is set too, whatever Outcome the Result then reports, and
	// logged only with Outcome ignored. Empty otherwise, as for
	// the Handler's ignored (no handler in the process that received the
	// event). It is text, not a value of a fixed set: keep it out of
	// metric attributes too.
	IgnoredReason string
	// Attempt is the inbox attempt this result reports (1, 2, ...); 0 for
	// a delivery answered by the Handler (Status is then set).
	Attempt int
	// Kind is KindTask for the attempt of a [Task]: EventID is then the
	// task's id and EventType its name. Empty otherwise.
	Kind InboxKind
	// AfterCommitPanics are the AfterCommit funcs of a processed event
	// that panicked after the commit. The commit stands and the delivery is
	// answered 200; the panics are logged at Error.
	AfterCommitPanics []*PanicError
}

// The defaults of Config.
const (
	DefaultTolerance    = 5 * time.Minute
	DefaultMaxBodyBytes = 1 << 20
	DefaultTimeout      = 10 * time.Second
)

// Handler is the http.Handler of a Stripe webhook route. It reads the body
// through a size limit, verifies the Stripe-Signature, claims the event and
// runs its registered handler in one transaction, and answers with a short
// fixed JSON body:
//
//	405 wrong method                                {"error":"method_not_allowed"}
//	413 body over Config.MaxBodyBytes, or over a
//	    smaller limit a middleware set on it        {"error":"body_too_large"}
//	400 body not read in full (the sender hung up
//	    before its Content-Length, or a middleware
//	    read or closed it)                          {"error":"unreadable_body"}
//	400 missing, malformed or wrong signature,
//	    timestamp outside Config.Tolerance          {"error":"invalid_signature"}
//	400 not a Stripe event; a key of a field read
//	    here (id, type, data, data.object.id, ...)
//	    sent again in another letter case ("ID");
//	    "data" or data.previous_attributes twice; an
//	    id, type, object id,
//	    account or API version with a NUL byte,
//	    invalid UTF-8 or an unpaired surrogate
//	    escape; an id, type or object id over 1024
//	    bytes;
//	    created outside the years 1 to 9999; thin
//	    event without Config.StripeClient; API
//	    version rejected by Config.StrictAPIVersion
//	    (an event the store does not hold); an
//	    event of another mode than Config.Mode      {"error":"invalid_event"}
//	200 handler ran and committed                   {"outcome":"processed"}
//	200 processed or skipped before, or recorded
//	    ignored (Config.RecordIgnored)              {"outcome":"duplicate"}
//	200 no handler for the type                     {"outcome":"ignored"}
//	200 handler returned Skip                       {"outcome":"skipped"}
//	500 handler error, panic or timeout; thin
//	    event: the Stripe API (or a proxy before
//	    it: a 4xx) refused the fetch, or the
//	    client cannot make it (a base URL that
//	    does not parse, is not http(s) or has a
//	    path other than /v1; endless
//	    redirects or one the client's own
//	    http.Client refuses, a certificate not
//	    accepted)                                   {"error":"processing_failed"}
//	503 store unreachable or read-only              {"error":"store_unavailable"}
//	503 thin event: the Stripe API unreachable,
//	    rate-limited or failing (429, 5xx, Stripe's
//	    or a proxy's), or its answer cut short;
//	    the same for OnCurrent's fetch of the
//	    object, or that fetch past FetchTimeout     {"error":"stripe_unavailable"}
//
// Nothing is stored for an answer other than 200, but in two cases, both
// answered 503 and both maybe stored: Stripe's retry is then answered
// duplicate. On PostgreSQL, a COMMIT whose answer was lost (a dropped
// connection, or Config.Timeout as it waited) and that the store could
// not confirm either way (its look-up failed too, or the transaction was
// still in progress 5 seconds on); and, in an [Inbox.Handler], an insert
// of the event still on its way when Config.Timeout ran out, which may
// commit after the answer. A Handler is safe for concurrent use. Make
// one with [NewHandler] or [Inbox.Handler]: the zero Handler is not
// usable, it answers every request 500 (see ServeHTTP) and its Recover
// fails.
//
// The Handler bounds the body's size (Config.MaxBodyBytes), not the time
// it takes to arrive: a route open to anyone needs an http.Server with
// ReadHeaderTimeout and ReadTimeout set (http.ListenAndServe sets none), or
// a sender that trickles its body holds a connection and a goroutine for as
// long as it likes. A body cut off by ReadTimeout is [ErrUnreadableBody].
//
// A thin event notification (event destinations, API v2) carries no
// snapshot: with Config.StripeClient the Handler fetches the event and
// handles that. Its handler's Event has the v2 event's id, type, created,
// livemode and context (as Account); Object is the event's data decoded
// into T (the event type's own fields, such as
// stripe.V1BillingMeterErrorReportTriggeredEventData, not a snapshot of
// the object the event is about), Previous is its changes, APIVersion is
// empty (v2 events are unversioned) and Raw is the fetched event, whose
// related_object names the object to fetch for its current state. The
// claim's object id, and the inbox's per-object order, is
// related_object.id.
type Handler struct {
	dispatcher
	cfg   Config
	log   *slog.Logger
	inbox *Inbox           // nil: apply in the request
	obs   *handlerObserver // nil: no Observer.Fetch nor Link

	warnedVersions sync.Map // API versions already logged
}

// NewHandler returns the webhook handler for store and the handlers
// registered in hs by now: it takes a snapshot of hs, after which [On] and
// [OnCurrent] refuse to register in hs. It fails when store is nil or a
// PgxStore [NewPgxStore] did not make, or when cfg is invalid; see
// [Config].
func NewHandler(store Store, hs *Handlers, cfg Config) (*Handler, error) {
	if hs == nil {
		return nil, errorf("NewHandler: nil *Handlers")
	}
	h, err := newHandler(store, cfg)
	if err != nil {
		return nil, err
	}
	hs.take("NewHandler")
	h.dispatcher = newDispatcher(store, hs, !h.cfg.DisableFastDecoder, h.cfg.Timeout, "Config.Timeout")
	hs.warnUnknownTypes(h.log, "NewHandler")
	return h, nil
}

// newHandler validates cfg, applies its defaults and returns a Handler
// without its dispatcher.
func newHandler(store Store, cfg Config) (*Handler, error) {
	if err := checkStore("NewHandler", store); err != nil {
		return nil, err
	}
	if err := checkSecrets(cfg.Secrets); err != nil {
		return nil, err
	}
	if cfg.StripeClient != nil {
		if err := checkStripeClient("Config.StripeClient", cfg.StripeClient); err != nil {
			return nil, err
		}
	}
	switch cfg.Mode {
	case "", ModeLive, ModeTest:
	default:
		return nil, errorf("Config.Mode %q is not a mode: ModeLive (%q), ModeTest (%q), or empty to check none", string(cfg.Mode), ModeLive, ModeTest)
	}
	if cfg.StripeClient != nil {
		if err := checkKeyMode("Config.StripeClient", cfg.StripeClient, cfg.Mode); err != nil {
			return nil, err
		}
	}
	switch {
	case cfg.APIVersion == "":
		cfg.APIVersion = stripe.APIVersion
	case !validAPIVersion(cfg.APIVersion):
		return nil, errorf("Config.APIVersion %q is not a Stripe API version such as %q", cfg.APIVersion, stripe.APIVersion)
	}
	if err := defaultDuration(&cfg.Tolerance, DefaultTolerance, "Config.Tolerance"); err != nil {
		return nil, err
	}
	if cfg.Tolerance > RecoveryWindow {
		// Stripe signs each delivery as it sends it: a signature is
		// seconds old. One that verifies for longer than a claim is kept
		// lets a delivery sent again after its claim was pruned through.
		return nil, errorf("Config.Tolerance %s is over %s (RecoveryWindow): a signature would verify for longer than "+
			"an event's claim is kept (Retention.EventIDs, %s at least), and a delivery sent again once its claim was pruned would be applied again",
			cfg.Tolerance, window(RecoveryWindow), window(DefaultEventIDRetention))
	}
	if err := defaultDuration(&cfg.Timeout, DefaultTimeout, "Config.Timeout"); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxBodyBytes < 0:
		return nil, errorf("Config.MaxBodyBytes is negative (%d)", cfg.MaxBodyBytes)
	case cfg.MaxBodyBytes == 0:
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cfg.Secrets = append([]string(nil), cfg.Secrets...)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.obs = handlerObserverOf(cfg.Observer, h.log)
	return h, nil
}

// isNil reports a nil interface or one holding a nil pointer, map, func,
// channel or slice: a typed nil *MemoryStore would fail only at the first
// delivery.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// checkSecrets refuses secrets that cannot be webhook signing secrets, so
// that a misconfiguration fails at start-up rather than every delivery.
func checkSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errorf("Config.Secrets: at least one webhook signing secret (whsec_...) is required")
	}
	for i, s := range secrets {
		switch {
		case strings.TrimSpace(s) == "":
			return errorf("Config.Secrets[%d] is empty (an environment variable not set?): "+
				"give the endpoint's signing secret (whsec_..., from the Dashboard's webhook page or `stripe listen`)", i)
		case strings.TrimSpace(s) != s:
			// A newline from an env file would fail every signature.
			return errorf("Config.Secrets[%d] has leading or trailing white space", i)
		case strings.ContainsAny(s[:1]+s[len(s)-1:], "\"'`"):
			// An env file whose quotes were kept (docker's --env-file
			// keeps them) would fail every signature.
			return errorf("Config.Secrets[%d] is in quotes, which no signing secret has: "+
				"remove them (an env file read with its quotes kept, as docker's --env-file does)", i)
		case isAPIKey(s):
			return errorf("Config.Secrets[%d] is a Stripe API key, not a webhook signing secret: "+
				"use the endpoint's signing secret (whsec_..., from the Dashboard's webhook page or `stripe listen`), and keep the API key out of the webhook's configuration", i)
		}
	}
	return nil
}

// isAPIKey reports a secret, restricted or publishable API key.
func isAPIKey(s string) bool {
	for _, prefix := range [...]string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// validAPIVersion reports a yyyy-mm-dd.train version, its train a word:
// no dot, no white space (a line end read from a file with the value) or
// other control character, its date from 2024-09-30.acacia on; or a
// yyyy-mm-dd version from before the release trains, which began then.
func validAPIVersion(v string) bool {
	date, train, ok := strings.Cut(v, ".")
	if !ok {
		return date < firstReleaseTrain && validDate(date)
	}
	if train == "" || strings.IndexFunc(train, func(r rune) bool {
		return r == '.' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}) >= 0 {
		return false
	}
	return date >= firstReleaseTrain && validDate(date)
}

// firstReleaseTrain is the date of the first API version with a release
// train; every version before it has none.
const firstReleaseTrain = "2024-09-30"

func validDate(date string) bool {
	_, err := time.Parse(time.DateOnly, date)
	return err == nil
}

func defaultDuration(d *time.Duration, def time.Duration, field string) error {
	switch {
	case *d < 0:
		return errorf("%s is negative (%s)", field, *d)
	case *d == 0:
		*d = def
	}
	return nil
}

// Client-facing bodies: short, fixed, and free of internal detail.
var (
	bodyMethodNotAllowed = []byte(`{"error":"method_not_allowed"}`)
	bodyTooLarge         = []byte(`{"error":"body_too_large"}`)
	bodyInvalidSignature = []byte(`{"error":"invalid_signature"}`)
	bodyInvalidEvent     = []byte(`{"error":"invalid_event"}`)
	bodyUnreadable       = []byte(`{"error":"unreadable_body"}`)
	bodyFailed           = []byte(`{"error":"processing_failed"}`)
	bodyUnavailable      = []byte(`{"error":"store_unavailable"}`)
	bodyOutcome          = map[Outcome][]byte{
		OutcomeProcessed: []byte(`{"outcome":"processed"}`),
		OutcomeDuplicate: []byte(`{"outcome":"duplicate"}`),
		OutcomeIgnored:   []byte(`{"outcome":"ignored"}`),
		OutcomeSkipped:   []byte(`{"outcome":"skipped"}`),
		OutcomeQueued:    []byte(`{"outcome":"queued"}`),
	}
)

// ServeHTTP implements http.Handler. A Handler that [NewHandler] or
// [Inbox.Handler] did not return (a zero or nil one) answers every
// request 500 {"error":"processing_failed"}, which Stripe retries, and
// logs it at Error through slog.Default, naming them.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.made("ServeHTTP"); err != nil {
		serveNotMade(w, r, err)
		return
	}
	res := Result{}
	start := time.Now()
	ctx, done := h.cfg.Observer.delivery(r.Context(), h.log, r)
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	status, body := h.serve(w, r, &res)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	res.Status = status
	res.Duration = time.Since(start)
	report(r.Context(), h.log, h.cfg.OnResult, done, &res)
}

// made fails when h is not a Handler [NewHandler] or [Inbox.Handler]
// returned (a zero or nil one, which has no store), naming method, as
// Inbox.made does.
func (h *Handler) made(method string) error {
	if h == nil || h.store == nil {
		return errorf("Handler.%s: a Handler not made by NewHandler or Inbox.Handler", method)
	}
	return nil
}

// serveNotMade answers a request to a Handler not made by NewHandler or
// Inbox.Handler (err, made's) as a failed delivery, so that Stripe retries
// it once the service is fixed; it has no Logger of its own.
func serveNotMade(w http.ResponseWriter, r *http.Request, err error) {
	res := Result{Outcome: OutcomeFailed, Status: http.StatusInternalServerError, Err: err}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.Status)
	_, _ = w.Write(bodyFailed)
	report(r.Context(), slog.Default(), nil, nil, &res)
}

// serve does the work of ServeHTTP and fills res; it returns the answer.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, res *Result) (int, []byte) {
	res.Outcome = OutcomeRejected
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		res.Err = ErrMethodNotAllowed
		return http.StatusMethodNotAllowed, bodyMethodNotAllowed
	}
	payload, err := h.readBody(w, r)
	if err != nil {
		res.Err = err
		if errors.Is(err, ErrBodyTooLarge) {
			return http.StatusRequestEntityTooLarge, bodyTooLarge
		}
		return http.StatusBadRequest, bodyUnreadable
	}
	if err := h.verify(payload, r.Header.Get("Stripe-Signature"), time.Now()); err != nil {
		res.Err = err
		return http.StatusBadRequest, bodyInvalidSignature
	}
	env, err := envelope.Parse(payload)
	if errors.Is(err, envelope.ErrThinEvent) {
		return h.serveThin(r.Context(), payload, res)
	}
	if err != nil {
		res.Err = errorf("%w: %w", ErrMalformedEvent, err)
		return http.StatusBadRequest, bodyInvalidEvent
	}
	return h.accept(r.Context(), &env, payload, res)
}

// accept applies or stores a verified, parsed event: what every delivery,
// a thin event's fetched event and a recovered event go through. It fills
// res and returns the answer.
func (h *Handler) accept(ctx context.Context, env *envelope.Envelope, payload []byte, res *Result) (int, []byte) {
	if err := checkEnvelope(env); err != nil {
		res.Err = errorf("%w: %w", ErrMalformedEvent, err)
		return http.StatusBadRequest, bodyInvalidEvent
	}
	res.EventID, res.EventType, res.ObjectID, res.Account = env.ID, env.Type, env.ObjectID, env.Account
	if err := h.checkMode(env); err != nil {
		res.Err = err
		return http.StatusBadRequest, bodyInvalidEvent
	}
	handled := h.handles(env.Type)
	// A v2 event is unversioned; an ignored one is not decoded, and
	// OnCurrent's handlers are given the object fetched from the API.
	if !env.V2 && h.decodes(env.Type) {
		if err := h.checkAPIVersion(ctx, env); err != nil {
			if h.holds(ctx, env.ID) {
				res.Outcome = OutcomeDuplicate
				return http.StatusOK, bodyOutcome[OutcomeDuplicate]
			}
			res.Err = err
			return http.StatusBadRequest, bodyInvalidEvent
		}
	}

	if !handled && !h.cfg.RecordIgnored {
		res.Outcome = OutcomeIgnored
		return http.StatusOK, bodyOutcome[OutcomeIgnored]
	}
	if h.inbox != nil {
		return h.enqueue(ctx, env, payload, handled, res)
	}
	// Detached from the request: a sender that hangs up must not cut a
	// transaction short. Config.Timeout bounds it.
	outcome, err := h.run(h.obs.withObserver(context.WithoutCancel(ctx)), env, payload, h.cfg.Now(), nil, res)
	res.Outcome, res.Err = outcome, err
	switch {
	case outcome == OutcomeUnavailable: // the dispatcher's answer to ErrStoreUnavailable
		return http.StatusServiceUnavailable, bodyUnavailable
	case outcome == OutcomeFailed && errors.As(err, new(*fetchUnavailableError)):
		return http.StatusServiceUnavailable, bodyStripeUnavailable
	case outcome == OutcomeFailed || err != nil || outcome == OutcomeQueued || bodyOutcome[outcome] == nil:
		// Besides a failure, a Store of another package that breaks
		// Store.Run's contract: an error means nothing was applied,
		// whatever the outcome beside it, and queued is the inbox's.
		switch {
		case outcome != OutcomeFailed && err != nil:
			res.Err = errorf("the Store's Run answered the outcome %q with an error: %w", outcome, err)
		case outcome != OutcomeFailed:
			res.Err = errorf("the Store's Run answered the outcome %q, which no delivery has", outcome)
		}
		res.Outcome = OutcomeFailed
		return http.StatusInternalServerError, bodyFailed
	}
	return http.StatusOK, bodyOutcome[outcome]
}

// readBody reads the whole body through the size limit.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := h.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, ErrBodyTooLarge
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var buf []byte
	var err error
	ended := false // without an error, before its Content-Length
	if r.ContentLength >= 0 {
		// net/http never yields more than Content-Length bytes. The buffer
		// grows with what arrives, not with what the unauthenticated sender
		// claims: a Content-Length of the whole limit and a trickle must not
		// hold the limit's worth of memory per connection.
		buf, err = readFull(body, r.ContentLength)
		// Its io.ErrUnexpectedEOF comes with the bytes read before the
		// body ended; the reader's own errors come with none.
		ended = err != nil && buf != nil
	} else {
		buf, err = io.ReadAll(body)
	}
	if err != nil {
		return nil, h.bodyError(err, ended, len(buf), r.ContentLength)
	}
	return buf, nil
}

// bodyError is the error of a body that could not be read: err, or, when
// ended, a body that ended without an error after read of its announced
// (Content-Length) bytes. It names what points at a middleware before the
// Handler, as the server's own body never does: a limit of its own
// (http.MaxBytesReader), a body it closed, or one that ended early without
// an error (net/http reports a sender that hung up as
// io.ErrUnexpectedEOF).
func (h *Handler) bodyError(err error, ended bool, read int, announced int64) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge) && tooLarge.Limit < h.cfg.MaxBodyBytes:
		return errorf("%w: over the limit of %d bytes that a middleware before the Handler set on it (http.MaxBytesReader), "+
			"under Config.MaxBodyBytes (%d)", ErrBodyTooLarge, tooLarge.Limit, h.cfg.MaxBodyBytes)
	case errors.As(err, &tooLarge):
		return ErrBodyTooLarge
	case errors.Is(err, http.ErrBodyReadAfterClose):
		return errorf("%w: %w (a middleware before the Handler closed it)", ErrUnreadableBody, err)
	case ended && read == 0:
		return errorf("%w: %w: none of its %d bytes (Content-Length) was left to read, and no read failed: "+
			"did a middleware before the Handler read the body and not put it back?", ErrUnreadableBody, err, announced)
	case ended:
		return errorf("%w: %w: it ended after %d of its %d bytes (Content-Length), and no read failed: "+
			"did a middleware before the Handler read some of the body, or put back fewer bytes than it read?", ErrUnreadableBody, err, read, announced)
	}
	return errorf("%w: %w", ErrUnreadableBody, err)
}

// initialBodyBuffer is the buffer readFull starts with: most events fit.
const initialBodyBuffer = 32 << 10

// readFull reads exactly n bytes from r into a buffer that starts at
// initialBodyBuffer and doubles as they arrive, up to n; a body that ends
// early (io.EOF) is io.ErrUnexpectedEOF, as io.ReadFull reports it,
// returned with the bytes read before it. Another read error is returned
// as it is, with no bytes.
func readFull(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, min(n, initialBodyBuffer))
	read := 0
	for int64(read) < n {
		if read == len(buf) {
			buf = slices.Grow(buf, int(min(n-int64(read), int64(read))))
			buf = buf[:min(int64(cap(buf)), n)]
		}
		m, err := r.Read(buf[read:])
		read += m
		switch {
		case int64(read) == n:
			return buf, nil
		case err == io.EOF:
			return buf[:read], io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
	}
	return buf, nil
}

// verify checks the Stripe-Signature header against every secret with
// stripe-go's webhook package (HMAC-SHA256, constant-time comparison), and
// the timestamp against the tolerance in both directions: stripe-go rejects
// only old ones.
func (h *Handler) verify(payload []byte, header string, now time.Time) error {
	if header == "" {
		return ErrNotSigned
	}
	if len(header) > maxSignatureHeader {
		// stripe-go parses the whole header again for each secret,
		// allocating some 20 times its size: an unauthenticated sender's
		// header of a megabyte would cost a second of CPU per secret.
		return errorf("%w: header over %d bytes", ErrInvalidSignature, maxSignatureHeader)
	}
	ts, ok := signatureTimestamp(header)
	if !ok {
		return errorf("%w: no valid timestamp", ErrInvalidSignature)
	}
	if d := now.Sub(ts); d > h.cfg.Tolerance || d < -h.cfg.Tolerance {
		return ErrTimestampOutsideTolerance
	}
	for _, secret := range h.cfg.Secrets {
		err := webhook.ValidatePayloadWithTolerance(payload, header, secret, h.cfg.Tolerance)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, webhook.ErrTooOld):
			return ErrTimestampOutsideTolerance
		case errors.Is(err, webhook.ErrNoValidSignature):
			continue
		default:
			return errorf("%w: %w", ErrInvalidSignature, err)
		}
	}
	if len(payload) == 0 {
		return errorf("%w: the body is empty: did a middleware before the Handler read it and not put it back?", ErrInvalidSignature)
	}
	secrets := "the secret"
	if len(h.cfg.Secrets) > 1 {
		secrets = fmt.Sprintf("any of the %d secrets", len(h.cfg.Secrets))
	}
	return errorf("%w: no v1 signature matches the %d-byte body with %s: "+
		"a secret that is not the endpoint's, or a body changed before the Handler read it "+
		"(a middleware or proxy that re-encoded, trimmed or decompressed it)", ErrInvalidSignature, len(payload), secrets)
}

// maxSignatureHeader bounds the Stripe-Signature header. Stripe's is about
// 150 bytes (t=, a v1 signature per active secret, v0 in test mode); 8 KiB
// leaves room for over a hundred signatures.
const maxSignatureHeader = 8 << 10

// signatureTimestamp returns the t= element of a Stripe-Signature header:
// the last one, as stripe-go signs against the last one.
func signatureTimestamp(header string) (ts time.Time, ok bool) {
	for part := range strings.SplitSeq(header, ",") {
		if v, found := strings.CutPrefix(part, "t="); found {
			sec, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			ts, ok = time.Unix(sec, 0), true
		}
	}
	return ts, ok
}

// moveEndpointCure is what to do about an endpoint of another API version
// than Config.APIVersion: Stripe changes no endpoint's version in place.
const moveEndpointCure = "make a second endpoint at Config.APIVersion, with both secrets in Config.Secrets, and delete the old one " +
	"once the new one delivers; or set Config.APIVersion to the endpoint's once the handlers' types match it"

// checkAPIVersion compares the event's API version with the release train
// of Config.APIVersion (stripe-go's by default), as stripe-go's
// webhook.ConstructEvent does with its own, but warns instead of failing
// unless Config.StrictAPIVersion is set.
func (h *Handler) checkAPIVersion(ctx context.Context, env *envelope.Envelope) error {
	if compatibleAPIVersion(h.cfg.APIVersion, env.APIVersion) {
		return nil
	}
	if h.cfg.StrictAPIVersion {
		return errorf("%w: event %s has API version %q, Config.APIVersion is %q: %s",
			ErrAPIVersionMismatch, env.ID, env.APIVersion, h.cfg.APIVersion, moveEndpointCure)
	}
	if _, seen := h.warnedVersions.LoadOrStore(env.APIVersion, true); !seen {
		h.log.LogAttrs(ctx, slog.LevelWarn,
			"stripe webhook: event API version differs from Config.APIVersion (another release train); accepting and decoding best-effort. "+
				moveEndpointCure+". Config.StrictAPIVersion rejects such events",
			slog.String("api_version", env.APIVersion), slog.String("config_api_version", h.cfg.APIVersion),
			slog.String("event_id", env.ID), slog.String("event_type", env.Type))
	}
	return nil
}

// holds reports whether the store holds the event eventID already: its
// claim in the ledger, or in inbox mode its row in the inbox. A copy of
// another API version refused under Config.StrictAPIVersion is then
// answered duplicate, as any copy of a known event is: while an endpoint
// moves to another version, Stripe sends each event to both endpoints in
// their versions under one id, and a 400 to the copy whose event was
// applied from the other would have Stripe retry it for days, then
// disable that endpoint. A thin notification of a held event is answered
// duplicate without a fetch (serveThin). A lookup that fails, or a Store
// of another package that cannot be read by event id, leaves the refusal
// (the fetch) as it is.
func (h *Handler) holds(ctx context.Context, eventID string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	_, held := h.held(ctx, eventID)
	return held
}

// held is holds within ctx, for a caller that bounds the look-ups itself,
// and the object id the event was stored with.
func (h *Handler) held(ctx context.Context, eventID string) (objectID string, ok bool) {
	if h.inbox != nil {
		if rec, ok, err := h.inbox.Lookup(ctx, eventID); err == nil && ok {
			return rec.ObjectID, true
		}
	}
	lk, ok := h.store.(ledgerLookup)
	if !ok {
		return "", false
	}
	rec, found, err := lk.LookupEvent(ctx, eventID)
	if err != nil || !found {
		return "", false
	}
	return rec.ObjectID, true
}

// The range of created that checkEnvelope accepts: the years 1 to 9999,
// which every store can keep (PostgreSQL's timestamptz, Go's time
// formats).
const (
	minCreated = -62135596800 // 0001-01-01T00:00:00Z
	maxCreated = 253402300799 // 9999-12-31T23:59:59Z
)

// checkEnvelope refuses an event whose columns no store can keep: it would
// fail on every retry on PostgreSQL, and in the inbox it would fail the
// deliveries stored in the same statement.
func checkEnvelope(env *envelope.Envelope) error {
	// The parser decodes invalid text to U+FFFD, as encoding/json does:
	// distinct ids would be claimed as one, and the event sent second
	// never applied.
	if env.Replaced != "" {
		return fmt.Errorf("the event's %s contains invalid UTF-8 or an unpaired surrogate escape", env.Replaced)
	}
	for _, f := range [...]struct{ name, value string }{
		{"id", env.ID}, {"type", env.Type}, {"data.object.id", env.ObjectID}, {"account", env.Account},
		{"api_version", env.APIVersion},
	} {
		if !validText(f.value) {
			return fmt.Errorf("the event's %s contains a NUL byte or invalid UTF-8", f.name)
		}
	}
	// The id, the type and the object id are keys of PostgreSQL's indexes
	// (the ledger's, its search by type and object, the inbox's per-object
	// order, OnCurrent's objects).
	for _, f := range [...]struct{ name, value string }{{"id", env.ID}, {"type", env.Type}, {"data.object.id", env.ObjectID}} {
		if len(f.value) > maxKeyLen {
			return fmt.Errorf("the event's %s is %d bytes long (at most %d)", f.name, len(f.value), maxKeyLen)
		}
	}
	if env.Created < minCreated || env.Created > maxCreated {
		return errors.New("the event's created is not a time between the years 1 and 9999")
	}
	return nil
}

// compatibleAPIVersion reports whether two API versions (yyyy-mm-dd.train)
// share a release train; a preview SDK, or one from before the release
// trains (each of those versions had breaking changes), needs the exact
// version.
func compatibleAPIVersion(sdk, event string) bool {
	_, sdkTrain, ok := strings.Cut(sdk, ".")
	if !ok || sdkTrain == "preview" {
		return sdk == event
	}
	_, eventTrain, ok := strings.Cut(event, ".")
	return ok && eventTrain == sdkTrain
}

// appendIDs appends to attrs the log's names of what res is about: a
// task's id and name, or an event's id and type; then more.
func (res *Result) appendIDs(attrs []slog.Attr, more ...slog.Attr) []slog.Attr {
	switch {
	case res.Kind == KindTask:
		attrs = append(attrs, slog.String("task_id", res.EventID), slog.String("task", res.EventType))
	case res.EventID != "":
		attrs = append(attrs, slog.String("event_id", res.EventID), slog.String("event_type", res.EventType))
	}
	return append(attrs, more...)
}

// appendObject appends to attrs the object res is about and its
// connected account, those known: under Connect an object id such as a
// capability's card_payments is the same in every account.
func (res *Result) appendObject(attrs []slog.Attr) []slog.Attr {
	if res.ObjectID != "" {
		attrs = append(attrs, slog.String("object_id", res.ObjectID))
	}
	if res.Account != "" {
		attrs = append(attrs, slog.String("account", res.Account))
	}
	return attrs
}

// report logs a delivery or an inbox attempt, and calls onResult, then
// observed (an Observer's done), those of them that are set.
func report(ctx context.Context, log *slog.Logger, onResult, observed func(Result), res *Result) {
	level := slog.LevelInfo
	switch res.Outcome {
	case OutcomeDuplicate, OutcomeIgnored:
		level = slog.LevelDebug
		if res.IgnoredReason != "" && res.State == InboxIgnored {
			level = slog.LevelWarn // a worker's: a receiver had the handler
		}
	case OutcomeRejected:
		level = slog.LevelWarn
	case OutcomeFailed, OutcomeUnavailable:
		level = slog.LevelError
	}
	if len(res.AfterCommitPanics) > 0 {
		level = slog.LevelError
	}
	if log.Enabled(ctx, level) {
		attrs := []slog.Attr{slog.String("outcome", string(res.Outcome))}
		if res.Attempt == 0 {
			attrs = append(attrs, slog.Int("status", res.Status))
		} else {
			attrs = append(attrs, slog.Int("attempt", res.Attempt))
			if res.State != "" {
				// outcome=failed is every failed attempt's; the state
				// tells a retry (failed) from the last (dead_letter).
				attrs = append(attrs, slog.String("state", string(res.State)))
			}
		}
		attrs = append(attrs, slog.Duration("duration", res.Duration))
		attrs = res.appendObject(res.appendIDs(attrs))
		if res.Err != nil {
			attrs = append(attrs, slog.String("error", maskedText(res.Err)))
		}
		if res.SkipReason != "" {
			attrs = append(attrs, slog.String("skip_reason", res.SkipReason))
		}
		if res.IgnoredReason != "" && res.Outcome == OutcomeIgnored {
			attrs = append(attrs, slog.String("ignored_reason", res.IgnoredReason))
		}
		var stack *PanicError
		if errors.As(res.Err, &stack) {
			attrs = append(attrs, slog.String("stack", string(stack.Stack)))
		}
		for _, p := range res.AfterCommitPanics {
			attrs = append(attrs, slog.String("after_commit_panic", panicText(p.Value)), slog.String("after_commit_stack", string(p.Stack)))
		}
		msg := "stripe webhook"
		switch {
		case res.Kind == KindTask:
			msg = "idempotency task: attempt"
		case res.Attempt > 0:
			msg = "stripe webhook: inbox attempt"
		}
		log.LogAttrs(ctx, level, msg, attrs...)
	}
	// A panic of either is not the event's failure, which is recorded
	// already: the worker goes on, and the Observer still sees the result.
	if onResult != nil {
		callHook(ctx, log, "OnResult", res, func() { onResult(*res) })
	}
	if observed != nil {
		hook := "Observer.Delivery's done"
		if res.Attempt > 0 {
			hook = "Observer.Attempt's done"
		}
		callHook(ctx, log, hook, res, func() { observed(*res) })
	}
}
