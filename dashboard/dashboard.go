// Package dashboard is a web page for the operators of a service that uses
// package idempotency: what waits in the inbox and for how long, what failed
// and why, one event in detail, and, when the service turns them on, the
// actions that redrive or forget an event.
//
// The dashboard has NO authentication of its own. Anyone who can reach it
// sees the inbox (event ids, object ids, last errors) and, with the actions
// on, can run events again. Mount it only behind the service's own
// authentication, as any admin page:
//
//	dash, err := dashboard.New(dashboard.Config{Inbox: inbox, Ledger: store, AllowRedrive: true})
//	if err != nil { ... }
//	mux.Handle("/admin/webhooks/", requireAdmin(http.StripPrefix("/admin/webhooks", dash)))
//
// where requireAdmin is the service's middleware; a minimal one with HTTP
// basic auth:
//
//	func requireAdmin(next http.Handler) http.Handler {
//		want := []byte(os.Getenv("DASHBOARD_PASSWORD"))
//		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//			user, pass, ok := r.BasicAuth()
//			// Both compared in constant time, the second whatever the first
//			// gives: the time tells nothing of which one was wrong.
//			userOK := subtle.ConstantTimeCompare([]byte(user), []byte("admin"))
//			passOK := subtle.ConstantTimeCompare([]byte(pass), want)
//			if !ok || len(want) == 0 || userOK&passOK != 1 {
//				w.Header().Set("WWW-Authenticate", `Basic realm="webhooks", charset="UTF-8"`)
//				http.Error(w, "unauthorized", http.StatusUnauthorized)
//				return
//			}
//			next.ServeHTTP(w, r)
//		})
//	}
//
// # Mounting under a prefix
//
// The Dashboard serves its pages at paths relative to where it is mounted:
// / (the overview; where the inbox holds no event or task at all, as in
// synchronous mode, whose events are in the Ledger alone, it says why),
// /events (a list by kind, state, type, object,
// account and time received, a page at a time: each page's Next link
// starts after its last record, so that paging shows every record once
// while new ones arrive), /event?id= (one event, its attempts out of the
// inbox's MaxAttempts while it is still to be applied, a task's
// idempotency key (TaskRun.IdempotencyKey), by which the provider's log
// finds its requests, and, a task processed or skipped after more than
// one attempt, that an attempt before the last may have had its effect;
// how often it was redriven and when last, what holds it back, and, dead-lettered, what
// to do next: for a task, to look at the provider first, as a failed
// attempt may have had its effect), /search?q= (an event id or an object id; finding none, why the store may have none), /forget?id=
// (the page that asks to confirm a forget), and the
// actions POST /redrive and POST /forget. A page answers a query key
// it does not take (a typo: ?stat=dead_letter) with 400 and a message
// naming it, and a query part that does not parse (a semicolon, a bad %
// escape) with 400, instead of showing what it shows without it. Mount it with
// http.StripPrefix, under any prefix that ends in a slash; every link,
// form and redirect it writes is relative, so it needs no setting for the
// prefix. A request for the prefix without its slash (/admin/webhooks),
// which a router may send it, is redirected to the prefix with it.
//
// # Pages
//
// Pages are rendered on the server with html/template from templates
// embedded in the binary, with inline CSS: no script, no build step, no
// asset from elsewhere. Every answer forbids framing and caching and sets a
// Content-Security-Policy that allows nothing but the page's own styles and
// forms. A page fits the window, from a phone's 390 pixels wide: an id
// without a space breaks where it must, and a table wider than the window
// scrolls in its own box. A table shows a last error's first three lines;
// the event's page shows it all.
//
// Payloads are not shown unless Config.ShowPayloads is set: an event's body
// holds customer data (names, emails, addresses).
//
// The values a sender or a handler puts in the store (ids, types, last
// errors) are shown as text, each control character and each
// bidirectional control (an override, an isolate, a mark, which would
// let the browser reorder what follows it, so that an id reads as
// another) as U+FFFD, as idemctl shows them; in a payload those are \u
// escapes, which read the same in JSON. Links carry the values as stored.
//
// # Actions
//
// Redrive (Inbox.Redrive: a dead-lettered or failed event or task, or an
// ignored event, back to pending, with a fresh attempt budget; the
// ignored events in bulk only of a type the list is filtered by, as they
// are also those of every type no release handles) and forget
// (Inbox.Forget: the event leaves the ledger and the inbox, so that its
// next delivery is applied again as new; an event still to be applied,
// and a task, are refused) are off unless Config.AllowRedrive and
// Config.AllowForget turn them on; a page shows no button for an action
// that is off, and a POST to it is answered 403. A table that offers
// Redrive for a task says above it to look at the provider first: a
// task's failed attempt may have had its effect all the same. Forget
// cannot be undone: the event page's Forget button
// leads to a page that asks to confirm it, showing what will be forgotten
// (the event's type, inbox state, received time and ledger claim), whose
// button sends it (with the field confirm=yes); a POST of forget without
// that field is redirected (303) to that page, and nothing is done. That
// page answers an id neither the inbox nor the Ledger has with 404, and
// an event still to be applied or a task, which the forget refuses, with
// 409, each saying why, without the button; the forget, sent later,
// checks again. The actions are
// taken by POST only (any other method is answered 405; GET and HEAD of
// forget are its confirmation page, answered 403 when forget is off),
// and http.CrossOriginProtection refuses a cross-origin request from a
// browser with any method but GET, HEAD and OPTIONS (403 before the method
// is looked at; nothing changed), so that another site cannot make an
// operator's browser run them. A list's bulk redrive takes the list's
// kind, state, type, object, connected account and time range, and its
// button names them ("Redrive every dead_letter event of account
// acct_..."), beside what it would move now, every page of the list, as
// a dry run of the same redrive counts it ("3 events and 1 task to
// redrive now"): after a connected account reconnected, a list of its
// dead letters redrives them and no other account's. An object or an account
// selects events only (a task has neither: a POST of one with the kind
// task is refused, 400), and neither stands for the type a bulk redrive
// of ignored events needs. After an action the browser is redirected
// (303) to the page that shows its result (the event's page; for a bulk
// redrive the list; for several ids at once the overview), with a message
// saying what was done. Every action form of a page carries a token of
// that page: the same form sent again within ten minutes (a double click,
// a resend after the back button) is answered as the first time, with
// its message, and nothing is done again. (Another replica, which did not
// answer the first, acts on it: a redrive then moves nothing and says so,
// a forget finds nothing.)
//
// # Errors
//
// When the store cannot be read or an action fails, the page says so in
// one generic sentence and the status is 503; the error itself goes to
// Config.Logger only, since it may hold SQL or connection details. A
// list whose bulk redrive's count fails is shown all the same, with
// "count unavailable" beside the button, and the error logged at Warn.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency"
)

// Ledger is the store's record of the events it claimed: both
// idempotency.MemoryStore and idempotency.PgxStore are Ledgers. With one,
// the event page shows the claim of an event (also in synchronous mode,
// where events never enter the inbox), and search finds claimed events by
// id and by object id.
type Ledger interface {
	LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
	ListEvents(ctx context.Context, f idempotency.EventFilter) ([]idempotency.EventRecord, error)
}

// Config configures a Dashboard. Inbox is required; every other field has a
// default.
type Config struct {
	// Inbox is the inbox the dashboard shows and acts on, made by
	// idempotency.NewInbox. Required. An inbox made only for the
	// dashboard needs no handlers registered
	// (idempotency.NewInbox(store, idempotency.NewHandlers(),
	// idempotency.InboxConfig{MaxAttempts: ...})); do not call Run on
	// it. Give it the workers' MaxAttempts: an event's page says by its
	// Inbox.MaxAttempts how many attempts a record still to be applied
	// may have before it is dead-lettered.
	Inbox *idempotency.Inbox

	// Ledger, when set, adds the ledger's record of an event to its page,
	// and claimed events to search results. Usually the store the inbox
	// is on. Defaults to none.
	Ledger Ledger

	// ShowPayloads shows an event's stored body on its page. Defaults to
	// false: bodies hold customer data.
	ShowPayloads bool

	// AllowRedrive turns on the redrive action: dead-lettered and failed
	// events and tasks, and ignored events, go back to pending with a
	// fresh attempt budget. Every ignored event is redriven at once only
	// of one type (a list filtered by type): a bulk redrive of ignored
	// events without a type is refused, 400. Defaults to false.
	AllowRedrive bool

	// AllowForget turns on the forget action: a finished event's claim,
	// guards and inbox row are deleted, so that its next delivery is
	// processed as new. Defaults to false.
	AllowForget bool

	// TrustedOrigins are origins ("https://admin.example.com") besides the
	// dashboard's own from which a browser may POST the actions, as
	// http.CrossOriginProtection.AddTrustedOrigin takes them. Defaults to
	// none.
	TrustedOrigins []string

	// Title heads every page. Defaults to "Stripe webhooks".
	Title string

	// Logger receives the errors that the pages only mention, and one
	// record per action taken or refused. Defaults to slog.Default().
	Logger *slog.Logger

	// Now is the clock ages are computed from, and by which a
	// processing event's lease is said to run or to have expired.
	// Defaults to time.Now.
	Now func() time.Time
}

// A Dashboard is the http.Handler of the dashboard's pages and actions.
// Create it with New: the zero Dashboard is not usable, it answers every
// request 500 (see ServeHTTP). It is safe for concurrent use.
type Dashboard struct {
	cfg     Config
	maxList int          // the largest page of a list: maxListLimit, or lower in tests
	actions http.Handler // the actions behind http.CrossOriginProtection
	sent    sentForms    // the action forms sent lately, answered once
}

// New returns the dashboard cfg describes. It fails when cfg.Inbox is nil
// or not made by idempotency.NewInbox (a zero Inbox), cfg.Ledger is a nil
// pointer, or a trusted origin is malformed.
func New(cfg Config) (*Dashboard, error) {
	return newDashboard(cfg, maxListLimit)
}

// newDashboard is New with maxList the largest page of a list. Tests set
// it lower (NewWithMaxListLimit), so as to page through a list longer
// than it without thousands of records.
func newDashboard(cfg Config, maxList int) (*Dashboard, error) {
	switch {
	case cfg.Inbox == nil:
		return nil, errors.New("dashboard: Config.Inbox is required")
	case cfg.Inbox.MaxAttempts() == 0:
		// A zero Inbox (NewInbox sets at least 1), on which every page
		// would fail.
		return nil, errors.New("dashboard: Config.Inbox: an Inbox not made by idempotency.NewInbox")
	}
	if cfg.Ledger != nil {
		// A nil *PgxStore in the interface would pass the nil checks of
		// the pages and panic on every event page and search.
		if v := reflect.ValueOf(cfg.Ledger); v.Kind() == reflect.Pointer && v.IsNil() {
			return nil, fmt.Errorf("dashboard: Config.Ledger is a nil %T; leave it nil for no ledger", cfg.Ledger)
		}
	}
	cfg.setDefaults()
	d := &Dashboard{cfg: cfg, maxList: maxList}
	cop := http.NewCrossOriginProtection()
	for _, o := range cfg.TrustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, errors.New("dashboard: Config.TrustedOrigins: " + err.Error())
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.cfg.Logger.Warn("dashboard: cross-origin action refused", "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		d.renderMessage(w, r, http.StatusForbidden, "Refused",
			"This action was sent from another site, and was refused. Nothing was changed.")
	}))
	d.actions = cop.Handler(http.HandlerFunc(d.serveAction))
	return d, nil
}

// setDefaults sets the fields of cfg left zero that have a default.
func (cfg *Config) setDefaults() {
	if cfg.Title == "" {
		cfg.Title = "Stripe webhooks"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// ServeHTTP serves the page or action r asks for; see the package
// documentation for the paths. A Dashboard that New did not return (a
// zero or nil one) answers every request 500 with a page that says so,
// and logs it at Error through slog.Default.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if d == nil || d.cfg.Inbox == nil {
		serveNotMade(w, r)
		return
	}

	// http.StripPrefix("/admin/webhooks/") leaves "events", and
	// StripPrefix("/admin/webhooks") leaves "/events": both are served.
	switch strings.TrimPrefix(r.URL.Path, "/") {
	case "":
		if base, ok := slashless(r); ok {
			// At /admin/webhooks the relative links would leave the
			// dashboard: /admin/webhooks/ is where it is.
			w.Header().Set("Location", base+"/")
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		d.page(w, r, d.overview, flashKeys)
	case "events":
		d.page(w, r, d.list, listKeys)
	case "event":
		d.page(w, r, d.event, eventKeys)
	case "search":
		d.page(w, r, d.search, searchKeys)
	case "forget":
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			d.page(w, r, d.confirmForget, forgetKeys)
			return
		}
		d.actions.ServeHTTP(w, r)
	case "redrive":
		d.actions.ServeHTTP(w, r)
	default:
		d.renderMessage(w, r, http.StatusNotFound, "Not found", "There is no such page.")
	}
}

// serveNotMade answers a request to a Dashboard not made by New, which
// has no inbox, no Logger and no clock: a page of the defaults says so,
// linking nowhere, as every page of it says the same.
func serveNotMade(w http.ResponseWriter, r *http.Request) {
	d := &Dashboard{}
	d.cfg.setDefaults()
	d.cfg.Logger.Error("dashboard: a Dashboard not made by New", "path", r.URL.Path)
	d.render(w, r, http.StatusInternalServerError, "message", "Not set up", messageData{
		Text: "This dashboard was not made by dashboard.New, and shows nothing. The service's log says so too."})
}

// The query keys each page takes. The message after an action (flash)
// is msg and its counts (n, or events and tasks) on the page the action
// redirects to.
var (
	flashKeys  = []string{"msg", "n", "events", "tasks"}
	listKeys   = slices.Concat([]string{"kind", "state", "type", "object", "account", "since", "until", "limit", "after", "after_received"}, flashKeys)
	eventKeys  = slices.Concat([]string{"id"}, flashKeys)
	searchKeys = []string{"q"}
	forgetKeys = []string{"id"}
)

// page serves a page to GET and HEAD, and answers 405 to other methods,
// and 400 to a query with a key besides keys, or with a part that does
// not parse: a typo (?stat=dead_letter, ?state=dead_letter;) would
// otherwise show what the page shows without it (every event).
func (d *Dashboard) page(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request), keys []string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		d.renderMessage(w, r, http.StatusMethodNotAllowed, "Method not allowed", "This page is read with GET.")
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		// r.URL.Query would drop the part silently, as it would an
		// unknown key.
		d.renderMessage(w, r, http.StatusBadRequest, "Bad query",
			"The query does not parse: a part of it holds a semicolon, or a % not followed by two hexadecimal digits.")
		return
	}
	if bad := unknownKeys(q, keys); bad != "" {
		d.renderMessage(w, r, http.StatusBadRequest, "Bad query", bad)
		return
	}
	serve(w, r)
}

// unknownKeys is the message naming the keys of q besides keys, quoted
// (no control character of theirs reaches the page), or empty when there
// are none.
func unknownKeys(q url.Values, keys []string) string {
	var unknown []string
	for k := range q {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	what := "Unknown query key "
	if len(unknown) > 1 {
		what = "Unknown query keys "
	}
	return what + strings.Join(unknown, ", ") + ". This page takes " + strings.Join(keys, ", ") + "."
}

// slashless reports whether the request's own path (before StripPrefix)
// lacks the trailing slash of the dashboard's root, and returns its last
// element.
func slashless(r *http.Request) (string, bool) {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil || u.Path == "" || strings.HasSuffix(u.Path, "/") {
		return "", false
	}
	return path.Base(u.Path), true
}
