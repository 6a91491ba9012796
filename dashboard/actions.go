package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// maxActionForm bounds an action's form: a few ids and filter fields.
const maxActionForm = 64 << 10

// serveAction runs the action r names, once http.CrossOriginProtection
// let it through: POST only, and only when Config turns it on.
func (d *Dashboard) serveAction(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.URL.Path, "/")
	if r.Method != http.MethodPost {
		allow := http.MethodPost
		if action == "forget" {
			allow = "GET, HEAD, POST" // GET: its confirmation page
		}
		w.Header().Set("Allow", allow)
		d.renderMessage(w, r, http.StatusMethodNotAllowed, "Method not allowed", "Actions are sent with POST, from the dashboard's buttons.")
		return
	}
	if !d.allowed(w, r, action) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
	if err := r.ParseForm(); err != nil {
		d.badForm(w, r, action, "The form could not be read.")
		return
	}
	act := map[string]func(http.ResponseWriter, *http.Request){"redrive": d.redrive, "forget": d.forget}[action]
	if r.PostFormValue("token") == "" {
		act(w, r) // a form no page of the dashboard wrote
		return
	}
	key := action + "?" + r.PostForm.Encode()
	sent, first := d.sent.begin(key, d.cfg.Now())
	if !first {
		select {
		case <-sent.done:
		case <-r.Context().Done():
			return
		}
		if sent.loc != "" {
			d.cfg.Logger.Info("dashboard: form sent again: answered as the first time, nothing done", "action", action)
			w.Header().Set("Location", sent.loc)
			w.WriteHeader(http.StatusSeeOther)
			return
		}
		// The first failed: this one acts.
	}
	sw := &statusWriter{ResponseWriter: w}
	if sent != nil && first {
		// Deferred: a panic of the action, which net/http recovers, must
		// not leave the same form's next submission waiting.
		defer func() {
			loc := ""
			if sw.status == http.StatusSeeOther {
				loc = w.Header().Get("Location")
			}
			d.sent.finish(key, sent, loc)
		}()
	}
	act(sw, r)
}

// allowed reports whether Config turns action on, and answers 403 when it
// does not.
func (d *Dashboard) allowed(w http.ResponseWriter, r *http.Request, action string) bool {
	if on := map[string]bool{"redrive": d.cfg.AllowRedrive, "forget": d.cfg.AllowForget}[action]; on {
		return true
	}
	d.cfg.Logger.Warn("dashboard: action refused: turned off", "action", action)
	d.renderMessage(w, r, http.StatusForbidden, "Action turned off",
		"This dashboard does not "+action+" events: the service has not turned the action on.")
	return false
}

// redrivable are the states a redrive takes (InboxState.Redrivable): an
// event named by its id is redriven in any of them.
var redrivable = slices.DeleteFunc(idempotency.InboxStates(), func(s idempotency.InboxState) bool { return !s.Redrivable() })

// bulkIgnoredNeedsType is why a redrive of every ignored event needs a
// type: the list offers it only when filtered by one.
const bulkIgnoredNeedsType = "Redrive ignored events of one type: filter the list by its type. " +
	"The ignored events are also those of every type no release handles (Config.RecordIgnored), and one " +
	"redriven less than InboxConfig.RetryUnhandledFor (an hour) after it was received fails until then, " +
	"holding back the later events of its object."

// redrive moves the events named by the form's ids (dead-lettered, failed
// or ignored), or every event of the form's kind, state, type, object,
// account and time range (ignored ones of a type only:
// bulkIgnoredNeedsType), back to pending.
func (d *Dashboard) redrive(w http.ResponseWriter, r *http.Request) {
	f := idempotency.RedriveFilter{EventIDs: r.PostForm["id"], States: redrivable}
	if slices.Contains(f.EventIDs, "") {
		d.badForm(w, r, "redrive", "An event id is empty.")
		return
	}
	back := url.Values{}
	if len(f.EventIDs) == 0 {
		// Everything a list selects: its kind, state, type, object, account
		// and time range.
		state := idempotency.InboxState(r.PostFormValue("state"))
		if !state.Redrivable() {
			d.badForm(w, r, "redrive", "Redrive takes event ids, or the state dead_letter, failed or ignored.")
			return
		}
		// The list's filter, its type, object and account as
		// parseListFilter reads them, at the default page the redirect
		// goes back to; the list counted the redrive of the same filter
		// (listFilter.redrive).
		lf := listFilter{Kind: idempotency.InboxKind(r.PostFormValue("kind")), State: state, Type: strings.TrimSpace(r.PostFormValue("type")),
			Object: strings.TrimSpace(r.PostFormValue("object")), Account: strings.TrimSpace(r.PostFormValue("account")),
			Since: r.PostFormValue("since"), Until: r.PostFormValue("until"), Limit: defaultListLimit}
		var bad string
		if lf.since, lf.until, bad = parseRange(lf.Since, lf.Until); bad != "" {
			d.badForm(w, r, "redrive", bad)
			return
		}
		f = lf.redrive()
		if bad := lf.kindRefused("redrive"); bad != "" {
			d.badForm(w, r, "redrive", bad)
			return
		}
		if !f.Kind.CanBe(state) {
			d.badForm(w, r, "redrive", "A task is never ignored: redrive ignored events, of the kind event or of every kind.")
			return
		}
		if state == idempotency.InboxIgnored && f.EventType == "" {
			d.badForm(w, r, "redrive", bulkIgnoredNeedsType)
			return
		}
		back = lf.query() // the list redriven
	}
	events, tasks, err := d.cfg.Inbox.RedriveByKind(r.Context(), f)
	if err != nil {
		d.inboxError(w, r, "redriving", err)
		return
	}
	d.cfg.Logger.Info("dashboard: redrove", "events", events, "tasks", tasks, "event_ids", f.EventIDs,
		"kind", f.Kind, "event_type", f.EventType, "object_id", f.ObjectID, "account", f.Account, "states", f.States,
		"since", f.Since, "until", f.Until)
	msg := redrivenMsg(f)
	switch {
	case msg == "redriven" && tasks == 0:
		back.Set("n", strconv.Itoa(events))
	case msg == "redriven-tasks" && events == 0:
		back.Set("n", strconv.Itoa(tasks))
	default: // both kinds selected, or ids of a kind their form did not tell
		msg = "redriven-records"
		back.Set("events", strconv.Itoa(events))
		back.Set("tasks", strconv.Itoa(tasks))
	}
	back.Set("msg", msg)
	switch {
	case len(f.EventIDs) == 1:
		back.Set("id", f.EventIDs[0])
		seeOther(w, "event", back)
	case len(f.EventIDs) > 1:
		seeOther(w, "", back)
	default:
		seeOther(w, "events", back)
	}
}

// redrivenMsg is the code of the message after a redrive by f: of events
// (by kind, by the state ignored, which no task is in, by an object or an
// account, which no task has, or by ids that are all events'), of tasks
// (by kind, or by ids that are all tasks', task:<name>:<key>), each with
// its count n, or of both kinds, with the count of each (events and
// tasks).
func redrivenMsg(f idempotency.RedriveFilter) string {
	if len(f.EventIDs) == 0 {
		switch {
		case f.Kind == idempotency.KindTask:
			return "redriven-tasks"
		case f.Kind == idempotency.KindEvent, slices.Equal(f.States, []idempotency.InboxState{idempotency.InboxIgnored}),
			f.ObjectID != "" || f.Account != "":
			return "redriven"
		}
		return "redriven-records"
	}
	tasks := slices.ContainsFunc(f.EventIDs, display.IsTaskID)
	events := slices.ContainsFunc(f.EventIDs, func(id string) bool { return !display.IsTaskID(id) })
	switch {
	case tasks && events:
		return "redriven-records"
	case tasks:
		return "redriven-tasks"
	}
	return "redriven"
}

// badForm refuses an action for its form, 400, and logs the refusal (the
// reason is the page's own text, never the form's).
func (d *Dashboard) badForm(w http.ResponseWriter, r *http.Request, action, reason string) {
	d.cfg.Logger.Warn("dashboard: action refused: bad form", "action", action, "reason", reason)
	d.renderMessage(w, r, http.StatusBadRequest, "Bad form", reason)
}

// seeOther redirects the browser to the dashboard's page with query q, by
// a URL relative to the action's, which is beside every page: the
// redirect stays under whatever prefix the dashboard is mounted at.
// (http.Redirect would make it absolute from the path StripPrefix left.)
func seeOther(w http.ResponseWriter, page string, q url.Values) {
	loc := "./" + page
	if len(q) > 0 {
		loc += "?" + q.Encode()
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusSeeOther)
}

func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// kindRefused is why f's kind cannot be what it selects, in a sentence
// for the page that refuses to verb it (list, redrive), or "".
func (f listFilter) kindRefused(verb string) string {
	switch {
	case !isKind(f.Kind):
		return "Unknown kind: use event or task."
	case f.Kind == idempotency.KindTask && (f.Object != "" || f.Account != ""):
		return "A task has no object or account: " + verb + " an object's or an account's events, of the kind event or of every kind."
	}
	return ""
}

// isKind reports whether k is an inbox kind, or empty for both.
func isKind(k idempotency.InboxKind) bool {
	return k == "" || slices.Contains([]idempotency.InboxKind{idempotency.KindEvent, idempotency.KindTask}, k)
}

// forgetData is what the confirmation of a forget shows: the event as
// the inbox and the ledger have it, and, when the forget would not act,
// why (then the page offers no button).
type forgetData struct {
	Event   eventData
	Refused string
}

// confirmForget: the page that asks to confirm the forget of the event
// id, which cannot be undone. It looks the event up and shows what will
// be forgotten (type, inbox state, received, the ledger's claim); its
// form sends the forget, confirmed. An id the inbox and the ledger do not
// have (404), an event still to be applied and a task (409, as Forget
// refuses them) get a page that says so, without the form. The forget
// checks again: the event may change before the click.
func (d *Dashboard) confirmForget(w http.ResponseWriter, r *http.Request) {
	if !d.allowed(w, r, "forget") {
		return
	}
	id := r.URL.Query().Get("id") // the event page's, as stored
	if id == "" {
		d.renderMessage(w, r, http.StatusBadRequest, "No event", "Give an event id: forget?id=evt_...")
		return
	}
	ev, err := d.lookup(r, id)
	if err != nil {
		d.inboxError(w, r, "looking an event up", err)
		return
	}
	data, status, heading := forgetData{Event: ev}, http.StatusConflict, "Cannot forget "+id
	rec := ev.Record
	switch {
	case rec == nil && ev.Claim == nil:
		status = http.StatusNotFound
		// Forget would still delete guards kept after the claim was
		// pruned (Retention.Guards), which no Ledger method finds by id.
		data.Refused = "Nothing to forget: no event with this id in the inbox or the ledger. " +
			"(Guards of an event whose claim was pruned may be kept longer: idemctl forget deletes them.)"
		if d.cfg.Ledger == nil {
			data.Refused = "Nothing to forget: no event with this id in the inbox (this dashboard has no ledger to look in)."
		}
	case rec != nil && rec.Kind == idempotency.KindTask:
		data.Refused = forgetFlash["forget-task"]
	case rec != nil && !rec.State.Final():
		data.Refused = "Not forgotten now: the event is still to be applied (its inbox state is " + string(rec.State) +
			"); forget takes it once it is processed, skipped, ignored or dead-lettered."
	default:
		status, heading = http.StatusOK, "Forget "+id+"?"
	}
	d.render(w, r, status, "forget", heading, data)
}

// forget deletes the form's event from the ledger and the inbox (its claim,
// the guards its transaction claimed, its inbox row), so that its next
// delivery is processed as new, when the form confirms it (confirm=yes,
// the confirmation page's); a form without it (a page from before the
// confirmation, a hand-made POST) is sent to that page, nothing done. An
// event still to be applied, and a task, are refused.
func (d *Dashboard) forget(w http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id") // the confirmation page's, as stored
	if id == "" {
		d.badForm(w, r, "forget", "Forget takes an event id.")
		return
	}
	back := url.Values{"id": {id}}
	if r.PostFormValue("confirm") != "yes" {
		seeOther(w, "forget", back)
		return
	}
	ok, err := d.cfg.Inbox.Forget(r.Context(), id)
	switch {
	case errors.Is(err, idempotency.ErrForgetTask):
		// A task's page offers no forget: a hand-made POST.
		d.cfg.Logger.Warn("dashboard: forget refused: a task", "event_id", id)
		back.Set("msg", "forget-task")
		seeOther(w, "event", back)
		return
	case errors.Is(err, idempotency.ErrUnfinished):
		back.Set("msg", "forget-unfinished")
	case err != nil:
		d.inboxError(w, r, "forgetting an event", err)
		return
	case !ok:
		back.Set("msg", "forget-none")
	default:
		back.Set("msg", "forgotten")
	}
	d.cfg.Logger.Info("dashboard: forget", "event_id", id, "forgotten", ok, "refused", err != nil)
	seeOther(w, "event", back)
}
