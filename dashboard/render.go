package dashboard

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the page templates, each with the layout, parsed once: a
// template that does not parse is a bug of this package, found by any test.
var pages = parsePages("overview", "list", "event", "search", "forget", "message")

func parsePages(names ...string) map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(template.FuncMap{
		// line shows a stored value (an id, a type, a last error) as one
		// line of text, each control and bidirectional control U+FFFD:
		// html/template keeps a value inert, but the browser lets a
		// bidirectional control reorder what follows it, so that an id
		// reads as another.
		"line":       display.Line,
		"when":       when,
		"ago":        ago,
		"lease":      lease,
		"age":        age,
		"count":      display.Count,
		"idWord":     display.IDWord,
		"idWordNote": func() string { return display.IDWordNote },
		"redrivable": idempotency.InboxState.Redrivable,
		// redrivableTask reports whether recs hold a task a Redrive
		// takes, whose failed attempt may have had its effect.
		"redrivableTask": func(recs []idempotency.InboxRecord) bool {
			return slices.ContainsFunc(recs, func(rec idempotency.InboxRecord) bool {
				return rec.Kind == idempotency.KindTask && rec.State.Redrivable()
			})
		},
		"forgettable": idempotency.InboxState.Final,
		"records":     func(v view, recs []idempotency.InboxRecord) recordsTable { return recordsTable{v, recs} },
		"moment":      func(now, at time.Time, overdue bool) moment { return moment{now, at, overdue} },
		"overdue":     overdue,
		"attempts":    attempts,
		"taskKey":     func(rec idempotency.InboxRecord) string { return display.TaskKey(rec.EventID, rec.EventType) },
		// taskIdempotencyKey is the key every attempt of the task rec got
		// (TaskRun.IdempotencyKey), by which the provider's log finds its
		// requests.
		"taskIdempotencyKey": func(rec idempotency.InboxRecord) string {
			return display.TaskIdempotencyKey(rec.EventID, rec.EventType)
		},
		"unknown":    func() string { return display.Unknown },
		"emptyInbox": func() string { return display.EmptyInbox("search an event's id") },
		// lastError is a record's last error, or why it is ignored when it
		// was stored ignored with none (display.LastError).
		"lastError": func(rec idempotency.InboxRecord) string {
			return display.LastError(rec.State == idempotency.InboxIgnored, rec.LastError)
		},
		// listedLastError is lastError as a list's cell shows it, shorter
		// for an event stored ignored at receipt, as idemctl list shows it
		// (display.ListedLastError).
		"listedLastError": func(rec idempotency.InboxRecord) string {
			return display.ListedLastError(rec.State == idempotency.InboxIgnored, rec.LastError)
		},
		// redriven says how often rec was redriven and when last, as
		// idemctl show says it (display.Redriven): "never", "2 times,
		// last 2026-12-05 10:00:00 UTC".
		"redriven": func(rec idempotency.InboxRecord) string {
			return display.Redriven(rec.Redrives, when(rec.RedrivenAt))
		},
	}).ParseFS(templateFS, "templates/layout.html", "templates/records.html"))
	m := make(map[string]*template.Template, len(names))
	for _, name := range names {
		m[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return m
}

// view is what the layout renders; Data is the page's own.
type view struct {
	Title   string // the dashboard's
	Heading string // the page's
	Flash   string
	Now     time.Time
	Redrive bool // Config.AllowRedrive
	Forget  bool // Config.AllowForget
	// Token is in every action form of the page, so that the same form
	// sent twice is told from the same action asked again (sentForms).
	Token string
	Data  any
}

// recordsTable is what the "records" template renders: a table of inbox
// records, with the page's clock and actions.
type recordsTable struct {
	View    view
	Records []idempotency.InboxRecord
}

// moment is what the "moment" template renders: a time of a list's
// row, its age by the page's clock and its UTC time, shown both without
// hover (a title is out of reach of a keyboard and a touch screen).
type moment struct {
	Now, At time.Time
	Overdue bool // a next attempt overdue (overdue), marked so in text
}

// Date and Clock are At as every page shows it (when), cut after its
// date ("2026-12-05", "11:44:05 UTC"), so that a cell breaks it there,
// and not at a hyphen of the date, rather than widen its column.
func (m moment) Date() string {
	date, _, _ := strings.Cut(when(m.At), " ")
	return date
}

func (m moment) Clock() string {
	_, clock, _ := strings.Cut(when(m.At), " ")
	return clock
}

// overdue reports whether rec, pending or failed (a record with a next
// attempt), is due since more than display.OverdueAfter by now.
func overdue(now time.Time, rec idempotency.InboxRecord) bool {
	return display.Overdue(rec.NextAttemptAt, now)
}

// render writes the page name with data, or a generic error page when the
// template fails (the error is logged).
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name, heading string, data any) {
	v := view{
		Title: d.cfg.Title, Heading: heading, Flash: flash(r), Now: d.cfg.Now(),
		Redrive: d.cfg.AllowRedrive, Forget: d.cfg.AllowForget, Token: rand.Text(), Data: data,
	}
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.cfg.Logger.Error("dashboard: rendering a page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// messageData is a page of one sentence, with the links that fit it.
type messageData struct {
	Text string
	// Retry: a page read with GET that the store could not answer just
	// now, which offers "Try again", a link to itself.
	Retry bool
	// Overview: "Back to the overview", unless this is the overview
	// offering Retry, where it would be a link to itself.
	Overview bool
}

// renderMessage writes a page of one sentence.
func (d *Dashboard) renderMessage(w http.ResponseWriter, r *http.Request, status int, heading, text string) {
	retry := status == http.StatusServiceUnavailable && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	overview := strings.TrimPrefix(r.URL.Path, "/") == ""
	d.render(w, r, status, "message", heading, messageData{Text: text, Retry: retry, Overview: !(retry && overview)})
}

// inboxError answers err, the inbox's: input it refused (a NUL byte or
// invalid UTF-8 in an id, a type, an object or an account, from a typo or a crafted
// link) with 400; anything else it logs, as it may hold SQL or connection
// details, and tells the operator only that the store failed.
func (d *Dashboard) inboxError(w http.ResponseWriter, r *http.Request, doing string, err error) {
	if errors.Is(err, idempotency.ErrInvalidKey) {
		d.renderMessage(w, r, http.StatusBadRequest, "Bad input",
			"An id, a type, an object or an account in the request is not text the inbox can hold (a NUL byte, invalid UTF-8, an id over 1024 bytes).")
		return
	}
	d.cfg.Logger.Error("dashboard: "+doing, "path", r.URL.Path, "error", err)
	d.renderMessage(w, r, http.StatusServiceUnavailable, "Store unavailable",
		"The inbox could not be read or changed just now. The error is in the service's log.")
}

// flash is the message an action's redirect asks for: a fixed sentence per
// code, so that a crafted link cannot put words on the page.
func flash(r *http.Request) string {
	q := r.URL.Query()
	msg := q.Get("msg")
	var n int
	var moved, what string // what was redriven, and what was selected
	switch msg {
	case "redriven", "redriven-tasks":
		var ok bool
		if n, ok = redriveCount(q.Get("n")); !ok {
			return "" // not a count a redrive gave
		}
		what = map[string]string{"redriven": "event", "redriven-tasks": "task"}[msg]
		moved = display.Count(n, what, what+"s")
	case "redriven-records":
		events, ok := redriveCount(q.Get("events"))
		tasks, ok2 := redriveCount(q.Get("tasks"))
		if n = events + tasks; !ok || !ok2 || n < 0 {
			return ""
		}
		what, moved = "event or task", display.Kinds(events, tasks)
	default:
		return forgetFlash[msg]
	}
	switch {
	case n == 0:
		// A list's redrive takes its one state; a redrive by ids takes
		// any. Only the states a redrive takes are named.
		states := map[string]string{"dead_letter": "dead-lettered", "failed": "failed", "ignored": "ignored"}[q.Get("state")]
		if states == "" {
			states = "dead-lettered, failed or ignored"
		}
		return "Nothing redriven: no " + what + " selected is still " + states + "."
	case n == 1:
		return "Redrove " + moved + ": it is pending, with a fresh attempt budget."
	}
	return "Redrove " + moved + ": they are pending, with a fresh attempt budget."
}

// redriveCount reads a count of a redrive's message, and reports whether
// a redrive could have given it.
func redriveCount(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// forgetFlash are the messages after a forget, by code; the confirmation
// page says forget-task's of a task too.
var forgetFlash = map[string]string{
	"forgotten":         "Forgot the event: its claim, guards and inbox row are gone; its next delivery (a resend from Stripe's Dashboard, a recovery) is applied as new. Other replicas may still answer it duplicate for up to PgxConfig.RecentClaimsTTL (a minute by default).",
	"forget-none":       "Nothing to forget: the event is neither in the ledger nor in the inbox.",
	"forget-unfinished": "Not forgotten: the event is still to be applied (pending, processing or failed).",
	"forget-task":       "Not forgotten: this is a task, which runs once per key; forget takes events.",
}

// attempts is the event page's count of rec's attempts: for a record
// still to be applied (pending, failed or processing), out of
// maxAttempts, and how many more it may have before it is dead-lettered
// ("3 of 20: up to 17 more attempts before it is dead-lettered"); for a
// final one, the count alone, but for a processed or skipped task that
// took more than one, what that means (display.TaskRepeated).
func attempts(rec idempotency.InboxRecord, maxAttempts int) string {
	switch {
	case rec.State.Final() && rec.Kind == idempotency.KindTask && rec.Attempt > 1 && rec.State != idempotency.InboxDeadLetter:
		// A task's attempt does not roll back as an event's does; a
		// dead-lettered task's page says so in its next step.
		return strconv.Itoa(rec.Attempt) + ": " + display.TaskRepeated
	case rec.State.Final():
		return strconv.Itoa(rec.Attempt)
	}
	of := strconv.Itoa(rec.Attempt) + " of " + strconv.Itoa(maxAttempts)
	left := maxAttempts - rec.Attempt
	if rec.State == idempotency.InboxProcessing {
		// The attempt under way is counted already.
		if left <= 0 {
			return of + ", under way: the last; if it fails, or its lease expires, it is dead-lettered"
		}
		return of + ", under way: if it fails, up to " + display.Count(left, "more attempt", "more attempts") + " before it is dead-lettered"
	}
	// The next attempt is counted as it starts, and a worker makes it
	// even past maxAttempts (lowered since the last): then the last.
	if left <= 1 {
		return of + ": 1 more attempt, the last, before it is dead-lettered"
	}
	return of + ": up to " + strconv.Itoa(left) + " more attempts before it is dead-lettered"
}

// timeLayout is how every page shows a time, in UTC to the second
// ("2026-12-05 11:44:05 UTC"): the event page, the overview and the
// lists alike, and a form the list's time range takes (timeLayouts).
const timeLayout = "2006-01-02 15:04:05 UTC"

// when formats t for a page (timeLayout).
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(timeLayout)
}

// lease is display.Lease of rec, processing, by now, its end with how long
// ago it was or how soon it is; held says that events of its object hold
// it back.
func lease(now time.Time, rec idempotency.InboxRecord, held bool) string {
	return display.Lease(when(rec.LeaseUntil)+" ("+ago(now, rec.LeaseUntil)+")", rec.LeaseUntil.After(now), held)
}

// ago says how long before now t was ("3m 20s ago"), or how long after
// ("in 12s").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	if d := now.Sub(t); d >= 0 {
		return age(d) + " ago"
	}
	return "in " + age(t.Sub(now))
}

// age is d rounded to its two largest units: 2d 3h, 4m 10s, 850ms.
func age(d time.Duration) string {
	d = max(d, 0) // clocks of replicas differ a little
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
