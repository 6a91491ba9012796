package idempotency

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// RecoveryWindow is how far back Stripe's Events API lists events: 30
// days. [Handler.Recover] cannot start earlier.
const RecoveryWindow = 30 * 24 * time.Hour

// RecoveryOverlap is how far behind its checkpoint's last event a run of
// [Handler.Recover] that continues the checkpoint starts listing: 10
// minutes. The Events API is eventually consistent: an event can be listed
// only after events created later than it were listed and checkpointed,
// and a run that started after the checkpoint's last event would never see
// it. The events listed again come out duplicates; an event listed more
// than 10 minutes after events created after it is missed.
const RecoveryOverlap = 10 * time.Minute

// recoveryLeeway is how much earlier than RecoveryWindow before Now a
// Since may be: one taken as time.Now().Add(-RecoveryWindow) read the
// clock before Recover does, and was refused for being microseconds too
// early.
const recoveryLeeway = time.Minute

// relistMargin is how long before the end of RecoveryWindow a
// checkpoint's last event must be for a run that continues the checkpoint
// to require listing it again (RecoverOptions.Checkpoint): nearer the end,
// the Events API may have let it go.
const relistMargin = 24 * time.Hour

// DefaultRecoverRate is RecoverOptions.RequestsPerSecond's default: well
// under Stripe's limits of 25 requests per second for one endpoint (and
// for all of a sandbox), and leaving room for the service's own calls,
// which share them.
const DefaultRecoverRate = 10

// The Events API's bounds on a list request.
const (
	maxRecoverTypes    = 20  // types[]
	maxRecoverPageSize = 100 // limit
	maxRecoverRate     = 100 // Stripe's live-mode limit for the whole account
)

// maxRecoverFailedIDs bounds RecoverReport.FailedIDs.
const maxRecoverFailedIDs = 1000

// RecoverOptions selects the events [Handler.Recover] lists, and how.
type RecoverOptions struct {
	// Since is the oldest creation time recovered: events created at or
	// after it (in whole seconds). Required; no earlier than
	// RecoveryWindow (30 days) before Now, within a minute, so that
	// time.Now().Add(-RecoveryWindow), read before Recover reads Now, is
	// the whole window; a run that continues its Checkpoint from an event
	// after Since is held to the window from that event instead, so that
	// the same options run again after 30 days still continue it; and no
	// later than Now (a Since in the future is refused before any
	// request). Take it from before the outage began: an event delivered
	// and applied already costs only a duplicate.
	Since time.Time

	// Types lists only events of these types (at most 20, as the Events
	// API takes). Empty lists every type, and those without a handler are
	// answered ignored as a delivery would be: pass the handled types
	// (Handlers.EventTypes) to list fewer. They are exact types: a
	// wildcard such as "invoice.*" is refused before any request (the
	// Events API's types[] does not expand it, nor do handlers), as is a
	// type with white space, a control character or a comma, and a type
	// without a handler (a typo: its events would be answered ignored),
	// unless Config.RecordIgnored records them.
	Types []string

	// OnlyUndelivered lists only the events Stripe reports as not
	// delivered (delivery_success=false): still being retried, or failed
	// on every attempt to some endpoint. It is cheaper but not enough on
	// its own. It misses events that were delivered, answered 2xx and
	// never applied (a deployment that acknowledged and dropped them, an
	// inbox lost with its database, a handler fixed since that returned
	// nil without writing), and events raised while the endpoint was
	// disabled, which Stripe did not try to deliver to it. Use it for a
	// quick pass; after an outage, recover everything since it began.
	OnlyUndelivered bool

	// Account, when set, is a connected account's id (acct_...): every
	// request lists as that account (Stripe-Account), and so lists its
	// events, those Stripe sends a Connect endpoint, each with its
	// Account. Empty lists the events of client's own account. An id
	// without the acct_ prefix, with white space or a control character,
	// a path of accounts (acct_1/acct_2), or longer than 255 bytes is
	// refused before any request. A listed event of another account than
	// Account (the platform's own under Account, a connected account's
	// without it: a proxy or a fake that dropped Stripe-Account) stops the
	// run with [ErrStripeAPI], and nothing of its page is handed to the
	// Handler. Recover one account at a time, each under a checkpoint of
	// its own.
	Account string

	// Checkpoint names a checkpoint kept in the store, so that a run
	// stopped by an error or by its context can be continued: a later call
	// with the same name starts at the last event up to which every event
	// was handled, less RecoveryOverlap (10 minutes, for events the Events
	// API lists late; those handled already come out duplicates), and one
	// after a complete run recovers what came since. A checkpoint keeps the
	// Account, Types, OnlyUndelivered and Since it was started with;
	// continuing it with another Account (one checkpoint name per account),
	// other Types or OnlyUndelivered, or an earlier Since, fails with
	// [ErrCheckpointMismatch], naming each that differs with the
	// checkpoint's value and the options' (a later Since is fine: a
	// relative one such as "5 days ago" moves on between calls; one after
	// the checkpoint's last event starts at Since, as a new run). It
	// does not keep which Stripe account listed it: a run with another
	// account's API key (two accounts of one's own under one name) stops
	// with [ErrCheckpointMismatch] (no *CheckpointMismatchError) as its
	// listing passes the checkpoint's last event's second without that
	// event, or ends, before any event created after it, the checkpoint
	// not moved (the events of the RecoveryOverlap before it are handled
	// by then); not with OnlyUndelivered, whose listing may have lost
	// that event to a delivery since, nor when that event is within a day
	// of RecoveryWindow's end, when the Events API may have let it go.
	// Name one checkpoint per Stripe account, and per connected account.
	// Run one Recover per checkpoint at a time: two at once hand the same events
	// twice (the later ones duplicates). A save never moves the checkpoint
	// back to an event of an earlier second, so that a slower run does not
	// undo a faster one's progress. Empty keeps no checkpoint. A name
	// is valid UTF-8 without NUL bytes, at most 1024 bytes long
	// ([ErrInvalidKey] otherwise, before any request).
	Checkpoint string

	// RequestsPerSecond bounds the calls to the Events API (one per page, a
	// few more to find the oldest page, and Recover's own retries of a page
	// refused for now: 429, 5xx, the network), at most 100 (negative or
	// NaN is refused). Defaults to DefaultRecoverRate (10). The client's
	// own retries of a failed call come on top.
	RequestsPerSecond float64

	// PageSize is how many events one call lists, 1 to 100. Defaults to
	// 100.
	PageSize int

	// Now is the clock that RecoveryWindow is measured on, and that dates
	// the checkpoint. Defaults to time.Now.
	Now func() time.Time

	// OnPage, when set, is called after each page of events is handled
	// (and the checkpoint saved), with the report so far, its LastEventID
	// where the checkpoint stands: the place for a progress bar.
	OnPage func(RecoverReport)

	// OnEvent, when set, is called once for each event RecoverReport.Listed
	// counts, after it is handled, on Recover's goroutine, with its
	// Result: EventID, EventType (of a malformed event too, as listed),
	// ObjectID, Account, Outcome (a duplicate's too), Err, SkipReason, and
	// Duration, from the check for its claim to its outcome, as a
	// delivery's, to feed one latency histogram with both; Status is 0 and
	// Attempt 0. An event whose store was unavailable, which the next run
	// lists again, is not reported. Config.OnResult is not called for
	// recovered events: this is the place to count them, by type for
	// instance, to see which of Types the Events API listed no event for
	// (it answers a misspelt type with no events, not an error).
	OnEvent func(Result)
}

// RecoverReport counts what [Handler.Recover] did with the events it
// listed. Processed, Queued, Duplicate, Skipped, Ignored and Failed add up
// to Listed.
type RecoverReport struct {
	Listed    int // events listed by the Events API and handled
	Processed int // applied by their handler in this run (synchronous Handler)
	Queued    int // stored in the inbox, for its workers to apply (Inbox's Handler)
	Duplicate int // claimed before: by a delivery, an earlier run, or already in the inbox
	Skipped   int // their handler returned Skip
	Ignored   int // no handler for their type
	Failed    int // the handler failed, or the event was refused (StrictAPIVersion, malformed)
	// FailedIDs are the ids of the failed events, in the order they were
	// met; the first 1000.
	FailedIDs []string
	// Requests is how many calls were made to the Events API.
	Requests int
	// Resumed reports that the run continued a checkpoint: it started
	// RecoveryOverlap before the checkpoint's last event (at Since when
	// that is later). A run of a checkpoint whose last event is before
	// Since starts at Since, as a new run, and is not resumed.
	Resumed bool
	// LastEventID is the event up to which every event listed, in this
	// run or the runs of its checkpoint, was handled: where the checkpoint
	// stands. Empty when there is none.
	LastEventID string
}

// Recover fetches the events that Stripe created since opts.Since from the
// Events API (GET /v1/events, through client) and hands each to this
// Handler as if it had been delivered, oldest first, with the event's own
// JSON: the synchronous Handler claims it and runs its handler in one
// transaction; the Handler of an [Inbox] stores it for the workers.
// Already-claimed events come out as duplicates, so Recover can be run
// over a period that was partly delivered, and again. After an outage
// longer than Stripe's three days of retries, or with the endpoint
// disabled, it is the only way to get the events that were never
// delivered.
//
// Exactly once holds only while the ledger keeps the ids it claimed at
// least as long as recovery reaches back, RecoveryWindow (30 days): an id
// deleted from the ledger would be applied again by a Recover that lists
// its event. [PgxStore.Prune] keeps them at least 45 days, and refuses a
// shorter Retention; whatever else deletes them must keep every id
// processed in the last 30 days, plus the length of the longest recovery
// run (an event is processed after it is created, so that covers every
// event the Events API still lists).
//
// Recover handles one event at a time, in the order Stripe creates them
// (within one second, in the Events API's order). A failed event (handler
// error, panic, timeout, or refusal: another API version with
// Config.StrictAPIVersion) is counted, logged and listed in the report, and
// the run goes on; the checkpoint stops before it, so that the next run of
// the checkpoint tries it again (the events after it, and those of the
// RecoveryOverlap before it, come out duplicates). An event that fails in
// every run holds the checkpoint there: each run lists it and every event
// after it again, until its handler succeeds or returns [Skip] for it, and
// once the checkpoint's last event is older than RecoveryWindow the
// checkpoint is refused with [ErrRecoveryWindow]. The run stops, with the
// report so far and an error, when the store cannot be reached
// ([ErrStoreUnavailable]), a call to the API fails after the client's own
// retries and Recover's or answers a page it cannot go on from, such as an
// empty one with has_more true ([ErrStripeAPI]), or ctx is done; the event
// in hand is finished first (ctx does not cut its transaction short;
// Config.Timeout does), and the checkpoint is saved. Recover asks again
// for a page answered 429 (a rate limit) or 5xx, by Stripe or by a proxy
// or gateway before it (a 502, 503 or 504 with an HTML page or an empty
// body), cut short, not JSON or JSON that is not a list (a proxy's
// {"status":"ok"}, which read as a page would end the run as complete),
// or not answered (the network, a timeout): up to 5 times, 1, 2, 4, 8
// and 16 s later, each logged at Warn. stripe-go itself retries none of
// Stripe's 429 and 5xx, but does retry the network and an error answer
// (4xx or 5xx) without Stripe's JSON error, a proxy's page (the client's
// MaxNetworkRetries, 2 by default; not a 200 that does not decode) inside
// each of Recover's requests, before Recover asks again. Other answers (a 4xx,
// Stripe's or a proxy's, a key refused) stop the run at once, and so does
// a request the client cannot make (a base URL that does not parse, is
// not http or https, or has a path other than /v1; endless redirects, or
// one the client's own http.Client refuses; a certificate not accepted).
//
// It refuses, with [ErrRecoveryWindow] and before any request, the place
// it would start from when it is earlier than RecoveryWindow (and a
// minute) before opts.Now: Since, or the last event of a checkpoint it
// continues when that is not before Since (one before Since is not
// needed: the run starts at Since). A Since that old is accepted when the
// checkpoint's last event is within the window.
//
// Config.MaxBodyBytes does not limit listed events: it bounds what an
// unauthenticated sender can make the Handler read, and the Events API's
// answer comes from Stripe, read whole by client. An event a delivery was
// refused for as too large (413) is recovered.
//
// The Events API renders each event in the API version that was the
// account's default when the event was created, which may not be the
// webhook endpoint's: such events are decoded best-effort with one
// warning per version, or failed under Config.StrictAPIVersion.
//
// Recover logs each failed event at Error, and a summary of the run at
// Info, or at Error with the error when the run stopped on one (with the
// account when opts.Account is set, and the checkpoint and whether it was
// resumed when opts.Checkpoint is); options or a start it refuses before
// any request are returned, not logged. Config.OnResult is not called
// (RecoverOptions.OnEvent is called for each listed event instead). It
// lists the events of client's account, or with opts.Account those of one
// connected account (Connect), each request made as that account
// (Stripe-Account): a Connect endpoint, which Stripe sends only connected
// accounts' events, recovers them one account at a time, each under a
// checkpoint of its own; without Account it would hand that endpoint the
// platform's own events, which it is never sent. A listed event of another
// account than the one asked for stops the run with [ErrStripeAPI] before
// any event of its page is handled. v2 (thin) events are not recovered: the
// v1 Events API does not list them. It lists the events of the mode of
// client's API key: with Config.Mode set, a key whose prefix names the
// other mode (sk_test_ or rk_test_ for ModeLive, sk_live_ or rk_live_ for
// ModeTest) is refused with [ErrModeMismatch] before any request, and the
// first listed event of the other mode stops the run with it, nothing of
// its page handled and the checkpoint not moved past it. Without
// Config.Mode nothing compares the key's mode with the endpoint's: a test
// key hands a live endpoint's Handler test-mode events, which it applies
// as if delivered.
func (h *Handler) Recover(ctx context.Context, client *stripe.Client, opts RecoverOptions) (RecoverReport, error) {
	if err := h.made("Recover"); err != nil {
		return RecoverReport{}, err
	}
	return h.runRecovery(ctx, client, opts, recoverBackoff)
}

// runRecovery is Recover, waiting backoff before the first request it asks
// again.
func (h *Handler) runRecovery(ctx context.Context, client *stripe.Client, opts RecoverOptions, backoff time.Duration) (RecoverReport, error) {
	var report RecoverReport
	if err := checkStripeClient("Recover's client", client); err != nil {
		return report, err
	}
	if err := opts.setDefaults(); err != nil {
		return report, err
	}
	if err := checkKeyMode("Recover's client", client, h.cfg.Mode); err != nil {
		return report, err
	}
	if !h.cfg.RecordIgnored {
		for _, t := range opts.Types {
			if !h.handles(t) {
				return report, errorf("RecoverOptions.Types lists %q, which has no handler: its events would be answered ignored, unrecorded (Config.RecordIgnored records them)", t)
			}
		}
	}
	r := &recovery{
		h: h, client: client, opts: opts, report: &report,
		since: opts.Since.Unix(), backoff: backoff,
		pace: pacer{interval: nanoseconds(float64(time.Second) / opts.RequestsPerSecond)},
	}
	now := opts.Now()
	if opts.Since.After(now) {
		return report, errorf("RecoverOptions.Since (%s) is in the future", opts.Since.Format(time.RFC3339))
	}
	if err := r.loadCheckpoint(ctx); err != nil {
		return report, err
	}
	start := opts.Since
	if r.last.id != "" && r.last.created.Unix() >= r.since {
		start, r.behind = r.last.created, true
		r.since = max(r.since, r.last.created.Add(-RecoveryOverlap).Unix())
		if !opts.OnlyUndelivered && r.last.created.After(now.Add(-RecoveryWindow+relistMargin)) {
			r.relist = true
		}
	}
	if oldest := now.Add(-RecoveryWindow); start.Before(oldest.Add(-recoveryLeeway)) {
		what := "RecoverOptions.Since"
		if r.behind {
			what = fmt.Sprintf("the last event of checkpoint %q", opts.Checkpoint)
		}
		return report, errorf("%w: %s is %s, before %s", ErrRecoveryWindow, what,
			start.UTC().Format(time.RFC3339), oldest.UTC().Format(time.RFC3339))
	}
	report.Resumed = r.behind

	err := r.walk(ctx)
	if err == nil && r.relist && r.behind {
		err = r.notListed()
	}
	if saveErr := r.save(ctx); err == nil {
		err = saveErr
	}
	report.LastEventID = r.last.id
	r.logSummary(ctx, err)
	return report, err
}

func (o *RecoverOptions) setDefaults() error {
	if o.Since.IsZero() {
		return errorf("RecoverOptions.Since is required")
	}
	if len(o.Types) > maxRecoverTypes {
		return errorf("RecoverOptions.Types has %d types; the Events API takes at most %d", len(o.Types), maxRecoverTypes)
	}
	for i, t := range o.Types {
		if err := checkText(fmt.Sprintf("RecoverOptions.Types[%d]", i), t, true); err != nil {
			return err
		}
		if notAnEventType(t) || strings.Contains(t, ",") {
			// Never an event's type, as On refuses it: the run would list
			// none of the events meant, and report success.
			return errorf("RecoverOptions.Types[%d] (%q) has white space, a control character or a comma; no Stripe event has such a type", i, t)
		}
		if wildcardEventType(t) {
			// types[] matches exact types (only the API's single type
			// takes a wildcard), and handlers are registered per type.
			return errorf("RecoverOptions.Types[%d] (%q) is a wildcard; list the exact event types (Handlers.EventTypes)", i, t)
		}
	}
	o.Types = slices.Compact(slices.Sorted(slices.Values(o.Types)))
	switch r := o.RequestsPerSecond; {
	case math.IsNaN(r) || r < 0 || r > maxRecoverRate:
		return errorf("RecoverOptions.RequestsPerSecond is %v; it must lie between 0 (the default, %d) and %d", r, DefaultRecoverRate, maxRecoverRate)
	case r == 0:
		o.RequestsPerSecond = DefaultRecoverRate
	}
	switch {
	case o.PageSize < 0 || o.PageSize > maxRecoverPageSize:
		return errorf("RecoverOptions.PageSize is %d; it must lie between 1 and %d", o.PageSize, maxRecoverPageSize)
	case o.PageSize == 0:
		o.PageSize = maxRecoverPageSize
	}
	if o.Account != "" {
		if err := stripeapi.CheckAccount(o.Account); err != nil {
			return errorf("RecoverOptions.Account %s", err.Error())
		}
	}
	if o.Checkpoint != "" {
		// The name is the checkpoint's key: PgxStore indexes it.
		if err := checkKey("RecoverOptions.Checkpoint", o.Checkpoint); err != nil {
			return err
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// recovery is one run of Handler.Recover.
type recovery struct {
	h      *Handler
	client *stripe.Client
	opts   RecoverOptions
	since  int64 // created[gte]: Since, or RecoveryOverlap before the checkpoint's last event
	pace   pacer
	report *RecoverReport
	// backoff is the wait before the first request asked again after a
	// 429, a 5xx or the network: recoverBackoff, shorter in tests.
	backoff time.Duration

	backend recoveryBackend     // nil without a checkpoint
	cp      *recoveryCheckpoint // the checkpoint as stored, or to store
	last    listedRef           // the last event up to which every event was handled
	saved   string              // the last event id the checkpoint holds
	behind  bool                // listing again behind the checkpoint's last event: last stays
	failed  bool                // an event failed: last stays before it
	// relist: the run must list the checkpoint's last event again; still
	// behind at an event created after that event's second, or at the
	// listing's end, it is of another Stripe account than the
	// checkpoint's (see notListed). False with OnlyUndelivered (the event
	// may have been delivered since) and for an event within relistMargin
	// of RecoveryWindow's end.
	relist bool
}

// listedRef names a listed event.
type listedRef struct {
	id      string
	created time.Time
}

// loadCheckpoint finds opts.Checkpoint and checks it against the options.
func (r *recovery) loadCheckpoint(ctx context.Context) error {
	name := r.opts.Checkpoint
	if name == "" {
		return nil
	}
	backend, ok := r.h.store.(recoveryBackend)
	if !ok {
		return errorf("RecoverOptions.Checkpoint: %T keeps no checkpoints (MemoryStore and PgxStore do)", r.h.store)
	}
	r.backend = backend
	want := recoveryCheckpoint{
		Name: name, Since: time.Unix(r.since, 0), Account: r.opts.Account, Types: strings.Join(r.opts.Types, ","),
		OnlyUndelivered: r.opts.OnlyUndelivered,
	}
	stored, found, err := backend.loadCheckpoint(ctx, name)
	switch {
	case err != nil:
		return err
	case !found:
		r.cp = &want
		return nil
	}
	if err := mismatch(stored, want); err != nil {
		return err
	}
	r.cp = &stored
	r.last = listedRef{id: stored.LastEventID, created: stored.LastCreated}
	r.saved = stored.LastEventID
	return nil
}

// CheckpointMismatchError is the error of [ErrCheckpointMismatch]: the
// options RecoverOptions.Checkpoint was started with, and which of the
// options given to continue it differ, for a caller that words the
// refusal in its own terms (idemctl recover, in its flags). Its text is
// the library's, which names RecoverOptions' fields, each that differs
// with the checkpoint's value and the run's. One made by a caller (a fake
// of Recover in a test) is ErrCheckpointMismatch too, and its text names
// its Checkpoint.
type CheckpointMismatchError struct {
	Checkpoint      string    // the checkpoint's name
	Since           time.Time // the Since it was started with, in whole seconds
	Account         string    // its Account; "" for the client's own account
	Types           []string  // its Types, sorted; nil for every type
	OnlyUndelivered bool      // its OnlyUndelivered

	// Differing names each RecoverOptions field the run differs in, in
	// the order RecoverOptions declares them: "Since" (earlier than the
	// checkpoint's), "Types", "OnlyUndelivered", "Account".
	Differing []string

	err error
}

// Error is the text of the error Unwrap returns.
func (e *CheckpointMismatchError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the refusal, which wraps ErrCheckpointMismatch: the
// library's names each option that differs; one made by a caller, its
// Checkpoint.
func (e *CheckpointMismatchError) Unwrap() error {
	if e.err == nil { // made by a caller
		return errorf("%w: checkpoint %q", ErrCheckpointMismatch, e.Checkpoint)
	}
	return e.err
}

// mismatch is the refusal to continue checkpoint cp with the options
// want holds, naming each that differs, or nil where want may continue
// it.
func mismatch(cp, want recoveryCheckpoint) error {
	var differing, values []string
	differ := func(field, format string, args ...any) {
		differing = append(differing, field)
		values = append(values, field+" "+fmt.Sprintf(format, args...))
	}
	if want.Since.Before(cp.Since) { // a later Since is fine: "5 days ago" moves on
		differ("Since", "%s, not the earlier %s", cp.Since.UTC().Format(time.RFC3339), want.Since.UTC().Format(time.RFC3339))
	}
	types := splitTypes(cp.Types)
	if cp.Types != want.Types {
		differ("Types", "%s, not %s", typesText(types), typesText(splitTypes(want.Types)))
	}
	if cp.OnlyUndelivered != want.OnlyUndelivered {
		differ("OnlyUndelivered", "%t, not %t", cp.OnlyUndelivered, want.OnlyUndelivered)
	}
	if cp.Account != want.Account {
		differ("Account", "%s, not %s", accountText(cp.Account), accountText(want.Account))
	}
	if differing == nil {
		return nil
	}
	how := "the options it was started with"
	switch {
	case len(differing) == 1 && differing[0] == "Since":
		how = "a Since at or after its own"
	case differing[0] == "Since":
		how += " (a Since at or after its own)"
	}
	how += ", or name another checkpoint for these"
	if slices.Contains(differing, "Account") {
		how += " (one per account)"
	}
	return &CheckpointMismatchError{Checkpoint: cp.Name, Since: cp.Since, Account: cp.Account, Types: types,
		OnlyUndelivered: cp.OnlyUndelivered, Differing: differing,
		err: errorf("%w: checkpoint %q has RecoverOptions.%s: continue it with %s",
			ErrCheckpointMismatch, cp.Name, strings.Join(values, "; "), how)}
}

// splitTypes is a checkpoint's types, stored joined by commas: nil for
// every type.
func splitTypes(types string) []string {
	if types == "" {
		return nil
	}
	return strings.Split(types, ",")
}

// typesText writes RecoverOptions.Types.
func typesText(types []string) string {
	if len(types) == 0 {
		return "[] (every type)"
	}
	return fmt.Sprintf("%q", types)
}

// walk lists and handles the events, oldest first.
//
// The Events API lists newest first, and cannot start from the oldest
// event. With ending_before=X it returns the events just newer than X, a
// page still ordered newest first, with has_more telling whether newer
// ones follow (stripe-go's iterator reverses such pages; stripe-ruby #864
// shows the order). So, once one event is known, walking with
// ending_before from it and reading each page backwards yields every later
// event oldest first, and the newest event of a page is the cursor of the
// next: a cursor is an event id, exact even among the events of one second,
// and it is what the checkpoint keeps. The first event is found by oldest,
// also when a checkpoint is continued: its run starts RecoveryOverlap
// before the checkpoint's last event, not after it, for the events listed
// late. Time windows processed oldest first would need no cursor, but a
// window cannot be split below one second, and a checkpoint of (second,
// count) is not exact while events of that second are still being created.
func (r *recovery) walk(ctx context.Context) error {
	page, err := r.oldest(ctx)
	if err != nil {
		return err
	}
	if err := r.handlePage(ctx, page); err != nil || len(page.events) == 0 {
		return err
	}
	cursor := page.events[0].env.ID
	for {
		if cursor == "" {
			return errorf("%w: listing events: an event without an id", ErrStripeAPI)
		}
		page, err := r.list(ctx, eventQuery{endingBefore: cursor})
		if err != nil {
			return err
		}
		if err := r.handlePage(ctx, page); err != nil {
			return err
		}
		if !page.hasMore || len(page.events) == 0 {
			return nil
		}
		if page.events[0].env.ID == cursor {
			return errNoProgress
		}
		cursor = page.events[0].env.ID
	}
}

// errNoProgress is a page with more after it that would give the next
// request the cursor it was asked with: asking again would loop.
var errNoProgress = errorf("%w: listing events: a page with has_more true ends at the cursor it was asked for", ErrStripeAPI)

// oldest returns the oldest events created at or after Since, at most a
// page, newest first. The first request lists them all when they fit in a
// page. Otherwise it searches, one second at a time, for the end of a
// window [Since, end) that holds at least one event and no more than a
// page: about log2 of the seconds between Since and the newest event's
// (22 requests at most for 30 days). When more than a page of events share
// the window's first second, it pages to the end of that second's list.
//
// Events found by one request may no longer be listed by the next: with
// OnlyUndelivered, Stripe's retries deliver them meanwhile. A search that
// ends on an empty page starts again, so that the events after the ones
// that went are not taken for none.
func (r *recovery) oldest(ctx context.Context) (eventPage, error) {
	for {
		page, err := r.list(ctx, eventQuery{})
		if err != nil || !page.hasMore {
			return page, err
		}
		if page, err = r.search(ctx, page); err != nil || len(page.events) > 0 {
			return page, err
		}
	}
}

// search finds the oldest page from the first page listed, which has
// more after it.
func (r *recovery) search(ctx context.Context, page eventPage) (eventPage, error) {
	var err error
	empty := r.since                       // [since, empty) holds no event
	full := page.events[0].env.Created + 1 // [since, full) holds more than a page
	if full <= empty {
		// Asked for created >= since: an answer that breaks its own
		// filter would make every search end empty, and start again.
		return page, errorf("%w: listing events: an event created before the created[gte] asked for", ErrStripeAPI)
	}
	for full-empty > 1 {
		mid := empty + (full-empty)/2
		page, err = r.list(ctx, eventQuery{before: mid})
		switch {
		case err != nil:
			return page, err
		case len(page.events) == 0:
			empty = mid
		case page.hasMore:
			full = mid
		default:
			return page, nil
		}
	}
	page, err = r.list(ctx, eventQuery{before: full})
	after := ""
	for err == nil && page.hasMore {
		last := page.events[len(page.events)-1].env.ID
		switch last {
		case "":
			return page, errorf("%w: listing events: an event without an id", ErrStripeAPI)
		case after:
			return page, errNoProgress
		}
		after = last
		page, err = r.list(ctx, eventQuery{before: full, startingAfter: last})
	}
	return page, err
}

// eventQuery is what one list request asks for besides the options.
type eventQuery struct {
	before        int64 // created[lt]; 0 for none
	endingBefore  string
	startingAfter string
}

// eventPage is a listed page, its events parsed; newest first.
type eventPage struct {
	events  []listedEvent
	hasMore bool
}

// listedEvent is one listed event as sent, and its envelope.
type listedEvent struct {
	raw json.RawMessage
	env envelope.Envelope // ID and Created are set even when err is
	err error             // not an event envelope
}

// recoverRetries is how many times Recover asks again for a page whose
// request a later one may pass (stripeAPIError.transient: a 429, a 5xx,
// Stripe's or a proxy's, an answer cut short or none), and recoverBackoff
// the wait before the first time, doubled before each next: 1, 2, 4, 8
// and 16 s, half a minute in all. stripe-go retries no answer of
// Stripe's 429 or 5xx (only a 429 lock_timeout and a 409), and a run of a
// month's events takes long enough to meet one; a list is safe to ask
// again. It does retry a network error and an error answer without
// Stripe's JSON error (a proxy's page, a 4xx's too; not a 200 that does
// not decode), MaxNetworkRetries times (2 by default), within a second
// or two: Recover asks again after those retries too, once they
// gave up, so that a proxy or a gateway that fails for longer (a restart)
// does not end the run.
const (
	recoverRetries = 5
	recoverBackoff = time.Second
)

// list requests one page, at the options' pace, asking again after a
// failure a later request may pass, up to recoverRetries times.
func (r *recovery) list(ctx context.Context, q eventQuery) (eventPage, error) {
	params := &stripe.EventListParams{
		ListParams:   stripe.ListParams{Limit: stripe.Int64(int64(r.opts.PageSize))},
		CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: r.since, LesserThan: q.before},
	}
	if len(r.opts.Types) > 0 {
		params.Types = stripe.StringSlice(r.opts.Types)
	}
	if r.opts.OnlyUndelivered {
		params.DeliverySuccess = stripe.Bool(false)
	}
	if q.endingBefore != "" {
		params.EndingBefore = stripe.String(q.endingBefore)
	}
	if q.startingAfter != "" {
		params.StartingAfter = stripe.String(q.startingAfter)
	}
	if r.opts.Account != "" {
		params.SetStripeAccount(r.opts.Account)
	}
	var raw *rawEventPage
	for retry := 0; ; retry++ {
		if err := r.pace.wait(ctx); err != nil {
			return eventPage{}, err
		}
		r.report.Requests++
		var err error
		if raw, err = listEvents(ctx, r.client, params); err == nil {
			break
		}
		if retry == recoverRetries || ctx.Err() != nil || !transientAPIError(err) {
			return eventPage{}, err
		}
		wait := r.backoff << retry
		r.h.log.LogAttrs(ctx, slog.LevelWarn, "stripe recovery: the Events API refused a request for now; asking again",
			slog.String("error", maskedText(err)), slog.Int("retry", retry+1), slog.Duration("wait", wait))
		if next := time.Now().Add(wait); next.After(r.pace.next) {
			r.pace.next = next // the next pass's wait
		}
	}
	if raw.HasMore && len(raw.Data) == 0 {
		// No event to take the next cursor from: going on would ask
		// the same again, and stopping would take it for the end.
		return eventPage{}, errorf("%w: listing events: an empty page with has_more true", ErrStripeAPI)
	}
	page := eventPage{events: make([]listedEvent, len(raw.Data)), hasMore: raw.HasMore}
	for i, b := range raw.Data {
		ev := &page.events[i]
		ev.raw = b
		if ev.env, ev.err = envelope.Parse(b); ev.err != nil {
			var ref struct {
				ID      string `json:"id"`
				Type    string `json:"type"`
				Created int64  `json:"created"`
			}
			_ = json.Unmarshal(b, &ref) // what there is of them, for the cursor and the report
			ev.env = envelope.Envelope{ID: ref.ID, Type: ref.Type, Created: ref.Created}
			continue // refused as malformed, never handed to the Handler
		}
		// The errors below quote its id and account, the answer's, not
		// yet bounded (accept does that), as identifiers only: an answer
		// that is not Stripe's may hold anything there, a megabyte, which
		// would reach the logs.
		if ev.env.Account != r.opts.Account {
			// Not what was asked for: a proxy or a fake that dropped
			// Stripe-Account would hand a Connect endpoint the
			// platform's events.
			what := "the platform's own (no account)"
			if ev.env.Account != "" {
				what = "of connected account " + quotedToken(ev.env.Account)
			}
			asked := "the platform's own events"
			if r.opts.Account != "" {
				asked = "the events of connected account " + strconv.Quote(r.opts.Account)
			}
			return eventPage{}, errorf("%w: listing %s: event %s is %s; nothing of its page was handled", ErrStripeAPI, asked, answerToken(ev.env.ID), what)
		}
		if r.h.checkMode(&ev.env) != nil {
			// A key of the other mode, whose prefix did not say so: every
			// event it lists is of that mode.
			quoted := ev.env
			quoted.ID = answerToken(quoted.ID)
			return eventPage{}, errorf("listing events: %w; nothing of its page was handled", r.h.checkMode(&quoted))
		}
	}
	return page, nil
}

// accountText writes RecoverOptions.Account.
func accountText(account string) string {
	if account == "" {
		return `"" (the platform's own account)`
	}
	return strconv.Quote(account)
}

// handlePage handles a page's events oldest first, then saves the
// checkpoint.
func (r *recovery) handlePage(ctx context.Context, page eventPage) error {
	for i := len(page.events) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev := &page.events[i]
		if r.behind && (ev.env.ID == r.last.id || ev.env.Created > r.last.created.Unix()) {
			if r.relist && ev.env.ID != r.last.id {
				return r.notListed()
			}
			r.behind = false // at or past the checkpoint's last event: it moves from here
		}
		if err := r.handle(ctx, ev); err != nil {
			return err
		}
	}
	if err := r.save(ctx); err != nil {
		return err
	}
	if r.opts.OnPage != nil && len(page.events) > 0 {
		r.report.LastEventID = r.last.id
		r.opts.OnPage(*r.report)
	}
	return nil
}

// notListed is the error of a run that continued a checkpoint and listed
// past its last event's second, or to its end, without that event: the
// Events API lists an event for 30 days, so the client is of another
// Stripe account than the run that saved the checkpoint (two accounts of
// one's own, each with its key, under one name), and listing on from the
// other account's last event would miss every event before it. The run
// stops before any event created after that second, the checkpoint not
// moved.
func (r *recovery) notListed() error {
	return errorf("%w: checkpoint %q continues from event %s, created %s, which the Events API does not list to this client: "+
		"was it saved by a run with another Stripe account's API key? name one checkpoint per Stripe account",
		ErrCheckpointMismatch, r.opts.Checkpoint, r.last.id, r.last.created.UTC().Format(time.RFC3339))
}

// handle hands one event to the Handler, as a delivery.
func (r *recovery) handle(ctx context.Context, ev *listedEvent) error {
	res := Result{EventID: ev.env.ID, EventType: ev.env.Type, ObjectID: ev.env.ObjectID, Account: ev.env.Account}
	start := time.Now()
	switch {
	case ev.err != nil:
		res.Outcome, res.Err = OutcomeRejected, errorf("%w: %w", ErrMalformedEvent, ev.err)
	case r.claimed(ctx, &ev.env):
		res.Outcome = OutcomeDuplicate
	default:
		res.Outcome = OutcomeRejected // what accept refuses, as ServeHTTP's serve starts
		r.h.accept(ctx, &ev.env, ev.raw, &res)
	}
	if res.Outcome == OutcomeUnavailable {
		return errorf("Recover: event %s: %w", ev.env.ID, res.Err) // not handled: the next run lists it again
	}
	res.Duration = time.Since(start)
	rep := r.report
	rep.Listed++
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(res)
	}
	switch res.Outcome {
	case OutcomeProcessed:
		rep.Processed++
	case OutcomeQueued:
		rep.Queued++
	case OutcomeDuplicate:
		rep.Duplicate++
	case OutcomeSkipped:
		rep.Skipped++
	case OutcomeIgnored:
		rep.Ignored++
	default:
		rep.Failed++
		if len(rep.FailedIDs) < maxRecoverFailedIDs {
			rep.FailedIDs = append(rep.FailedIDs, ev.env.ID)
		}
		r.failed = true
		ids := Result{EventID: res.EventID, EventType: res.EventType, Account: res.Account} // as Recover's other lines, no object id
		r.h.log.LogAttrs(ctx, slog.LevelError, "stripe recovery: event failed; the checkpoint stays before it",
			ids.appendObject(ids.appendIDs(nil, slog.String("outcome", string(res.Outcome)), slog.String("error", maskedText(res.Err))))...)
		return nil
	}
	if !r.failed && !r.behind {
		r.last = listedRef{id: ev.env.ID, created: time.Unix(ev.env.Created, 0)}
	}
	return nil
}

// ledgerLookup is a store whose ledger can be read by event id:
// MemoryStore and PgxStore.
type ledgerLookup interface {
	LookupEvent(ctx context.Context, eventID string) (EventRecord, bool, error)
}

// claimed reports whether an inbox Handler's event of a handled type has
// a claim in the ledger already: the inbox no longer holds it (its
// finished row pruned, or applied before the service used the inbox), and
// storing it again would only have a worker find it claimed. A
// synchronous Handler's claim answers that itself; a lookup that fails
// leaves it to the inbox, whose enqueue reports the store.
func (r *recovery) claimed(ctx context.Context, env *envelope.Envelope) bool {
	lk, ok := r.h.store.(ledgerLookup)
	if !ok || r.h.inbox == nil || !r.h.handles(env.Type) {
		return false
	}
	_, found, err := lk.LookupEvent(ctx, env.ID)
	return err == nil && found
}

// save stores the checkpoint when it has moved, on a context that outlives
// ctx's cancellation: a stopped run keeps what it did.
func (r *recovery) save(ctx context.Context) error {
	if r.backend == nil || r.last.id == r.saved {
		return nil
	}
	cp := *r.cp
	cp.LastEventID, cp.LastCreated, cp.UpdatedAt = r.last.id, r.last.created, r.opts.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.h.cfg.Timeout)
	defer cancel()
	if err := r.backend.saveCheckpoint(ctx, &cp); err != nil {
		return err
	}
	r.saved = cp.LastEventID
	return nil
}

func (r *recovery) logSummary(ctx context.Context, err error) {
	rep := r.report
	attrs := []slog.Attr{
		slog.Int("listed", rep.Listed), slog.Int("processed", rep.Processed), slog.Int("queued", rep.Queued),
		slog.Int("duplicate", rep.Duplicate), slog.Int("skipped", rep.Skipped), slog.Int("ignored", rep.Ignored),
		slog.Int("failed", rep.Failed), slog.Int("requests", rep.Requests), slog.String("last_event_id", r.last.id),
	}
	if r.opts.Account != "" {
		attrs = append(attrs, slog.String("account", r.opts.Account))
	}
	if r.opts.Checkpoint != "" {
		attrs = append(attrs, slog.String("checkpoint", r.opts.Checkpoint), slog.Bool("resumed", rep.Resumed))
	}
	level, msg := slog.LevelInfo, "stripe recovery: done"
	if err != nil {
		level, msg = slog.LevelError, "stripe recovery: stopped"
		attrs = append(attrs, slog.String("error", maskedText(err)))
	}
	r.h.log.LogAttrs(ctx, level, msg, attrs...)
}

// pacer spaces calls at least interval apart: a limiter of one token is
// all one sequential caller needs.
type pacer struct {
	interval time.Duration
	next     time.Time
}

// wait returns when the next call may be made, or with ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	if d := time.Until(p.next); d > 0 && !pause(ctx, d) {
		return ctx.Err()
	}
	p.next = time.Now().Add(p.interval)
	return nil
}

// quotedToken is s, from an answer, quoted when it is an identifier
// (answerToken), and answerToken's placeholder otherwise.
func quotedToken(s string) string {
	if t := answerToken(s); t != s {
		return t
	}
	return strconv.Quote(s)
}
