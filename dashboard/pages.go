package dashboard

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// states are the inbox states in the order pages show them.
var states = idempotency.InboxStates()

// overviewRows is how many failed and dead-lettered records the overview
// lists; the list page has the rest.
const overviewRows = 20

// stateCount is one cell of the overview's counts.
type stateCount struct {
	State idempotency.InboxState
	Count int
	// None: no record of the kind is ever in State (a task is never
	// ignored), and the cell shows no count.
	None bool
	// Estimated: Count is the store's estimate (InboxStats.Estimated),
	// shown as about that many.
	Estimated bool
}

type overviewData struct {
	Events, Tasks   []stateCount
	OldestPending   time.Time
	LastAttempt     time.Time
	Failed, Dead    []idempotency.InboxRecord
	MoreFailed      bool
	MoreDead        bool
	FailedN, DeadN  int
	EventsN, TasksN int
	// Estimated: a count of EventsN or TasksN is the store's estimate
	// (InboxStats.Estimated), and so are the totals.
	Estimated bool
}

// overview: counts by state for events and tasks, the oldest pending age,
// the last attempt's, and the failed and dead-lettered records.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.cfg.Inbox.Stats(ctx)
	if err != nil {
		d.inboxError(w, r, "reading inbox stats", err)
		return
	}
	data := overviewData{OldestPending: st.OldestPending, LastAttempt: st.LastAttempt, Estimated: len(st.Estimated) > 0}
	for _, s := range states {
		events, tasks := st.Events(s), st.TaskCounts[s]
		data.Events = append(data.Events, stateCount{State: s, Count: events, Estimated: st.Estimated[s]})
		data.Tasks = append(data.Tasks, stateCount{State: s, Count: tasks, None: !idempotency.KindTask.CanBe(s), Estimated: st.Estimated[s]})
		data.EventsN += events
		data.TasksN += tasks
	}
	data.FailedN, data.DeadN = st.Counts[idempotency.InboxFailed], st.Counts[idempotency.InboxDeadLetter]
	if data.Failed, err = d.cfg.Inbox.List(ctx, idempotency.InboxFilter{
		States: []idempotency.InboxState{idempotency.InboxFailed}, Limit: overviewRows,
	}); err != nil {
		d.inboxError(w, r, "listing the inbox", err)
		return
	}
	if data.Dead, err = d.cfg.Inbox.List(ctx, idempotency.InboxFilter{
		States: []idempotency.InboxState{idempotency.InboxDeadLetter}, Limit: overviewRows,
	}); err != nil {
		d.inboxError(w, r, "listing the inbox", err)
		return
	}
	data.MoreFailed, data.MoreDead = data.FailedN > len(data.Failed), data.DeadN > len(data.Dead)
	d.render(w, r, http.StatusOK, "overview", "Overview", data)
}

// listFilter is the list page's query: kind, state, type, object,
// account, time range, limit, and the position a later page starts after.
type listFilter struct {
	Kind     idempotency.InboxKind
	State    idempotency.InboxState // one state, or empty for all
	Type     string
	Object   string
	Account  string
	Since    string // as typed; since and until are the times they name
	Until    string
	Limit    int
	AllKinds []idempotency.InboxKind
	States   []idempotency.InboxState

	since, until time.Time
	after        idempotency.InboxPosition
}

// defaultListLimit is the list page's default Limit, and maxListLimit its
// largest: a page of more rows is no longer readable.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// parseListFilter reads the list page's query, whose limit is at most
// maxLimit; a value it does not know is an error for the operator to see
// (a typo must not list everything).
func parseListFilter(r *http.Request, maxLimit int) (listFilter, string) {
	q := r.URL.Query()
	f := listFilter{
		Kind: idempotency.InboxKind(q.Get("kind")), State: idempotency.InboxState(q.Get("state")),
		Type: strings.TrimSpace(q.Get("type")), Object: strings.TrimSpace(q.Get("object")),
		Account: strings.TrimSpace(q.Get("account")),
		Since:   strings.TrimSpace(q.Get("since")), Until: strings.TrimSpace(q.Get("until")),
		Limit:    min(defaultListLimit, maxLimit),
		AllKinds: []idempotency.InboxKind{idempotency.KindEvent, idempotency.KindTask},
		States:   states,
	}
	if bad := f.kindRefused("list"); bad != "" {
		return f, bad
	}
	if f.State != "" && !slices.Contains(states, f.State) {
		return f, "Unknown state."
	}
	var bad string
	if f.since, f.until, bad = parseRange(f.Since, f.Until); bad != "" {
		return f, bad
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return f, "The limit must be a number from 1 to " + strconv.Itoa(maxLimit) + "."
		}
		f.Limit = n
	}
	if id, at := q.Get("after"), q.Get("after_received"); id != "" || at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if id == "" || err != nil || t.IsZero() || !storable(t) {
			return f, "The page's position (after, after_received) is not one this dashboard wrote: start from the first page."
		}
		f.after = idempotency.InboxPosition{ReceivedAt: t, EventID: id}
	}
	return f, ""
}

// timeLayouts are the times a list's range takes: RFC 3339, a time as
// the pages show it (timeLayout), and in UTC what an HTML
// datetime-local or date field sends.
var timeLayouts = []string{time.RFC3339Nano, timeLayout, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// storable reports whether t is a time the inbox takes: in the years 1
// to 9999 in UTC.
func storable(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// parseRange reads the since and until of a list (or of the redrive of
// what it shows): each empty, or a time in one of timeLayouts, since
// before until.
func parseRange(since, until string) (time.Time, time.Time, string) {
	var ts [2]time.Time
	for i, s := range []string{since, until} {
		if s == "" {
			continue
		}
		for _, layout := range timeLayouts {
			if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil && storable(t) {
				ts[i] = t
				break
			}
		}
		if ts[i].IsZero() {
			return ts[0], ts[1], "Received " + [2]string{"since", "until"}[i] + ": not a time. Use 2026-11-20, 2026-11-20T14:30 (UTC), 2026-11-20 14:30:00 UTC or 2026-11-20T14:30:00+01:00."
		}
	}
	if !ts[0].IsZero() && !ts[1].IsZero() && !ts[0].Before(ts[1]) {
		return ts[0], ts[1], "Received since must be before until."
	}
	return ts[0], ts[1], ""
}

// query is f as the list page's query, without its position.
func (f listFilter) query() url.Values {
	q := url.Values{}
	setNonEmpty(q, "kind", string(f.Kind))
	setNonEmpty(q, "state", string(f.State))
	setNonEmpty(q, "type", f.Type)
	setNonEmpty(q, "object", f.Object)
	setNonEmpty(q, "account", f.Account)
	setNonEmpty(q, "since", f.Since)
	setNonEmpty(q, "until", f.Until)
	if f.Limit != defaultListLimit {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

type listData struct {
	Filter  listFilter
	Records []idempotency.InboxRecord
	// Next links the page after this one, when the filter selects more;
	// First the first page, when this is a later one.
	Next, First template.URL
	// Bulk is whether the page offers to redrive everything the filter
	// selects: a redrivable state and a record shown; for ignored, a type
	// (see bulkIgnoredNeedsType), which an object or an account does not
	// stand for.
	Bulk bool
	// BulkNeedsType is whether the page would offer it but for a type:
	// a list of ignored events of every type, which says to filter one.
	BulkNeedsType bool
	// BulkCount, with Bulk, is what the bulk redrive would move now, by
	// a dry run of its filter: "3 events and 1 task"; empty when the dry
	// run failed.
	BulkCount string
}

// redrive is the filter of the bulk redrive of what f lists: its kind,
// state, type, object, account and time range, every page of it.
func (f listFilter) redrive() idempotency.RedriveFilter {
	return idempotency.RedriveFilter{Kind: f.Kind, States: []idempotency.InboxState{f.State}, EventType: f.Type,
		ObjectID: f.Object, Account: f.Account, Since: f.since, Until: f.until}
}

// list: the records of one kind, state, type, object, account and time
// range, newest first, a page at a time: each page starts after the last
// record of the one before (InboxFilter.After), so that paging shows every
// record once while new ones arrive.
func (d *Dashboard) list(w http.ResponseWriter, r *http.Request) {
	f, bad := parseListFilter(r, d.maxList)
	if bad != "" {
		d.renderMessage(w, r, http.StatusBadRequest, "Bad filter", bad)
		return
	}
	inf := idempotency.InboxFilter{Kind: f.Kind, EventType: f.Type, ObjectID: f.Object, Account: f.Account,
		Since: f.since, Until: f.until, After: f.after, Limit: f.Limit}
	if f.State != "" {
		inf.States = []idempotency.InboxState{f.State}
	}
	recs, err := d.cfg.Inbox.List(r.Context(), inf)
	if err != nil {
		d.inboxError(w, r, "listing the inbox", err)
		return
	}
	bulk := d.cfg.AllowRedrive && f.State.Redrivable() && len(recs) > 0
	needsType := f.State == idempotency.InboxIgnored && f.Type == ""
	data := listData{Filter: f, Records: recs, Bulk: bulk && !needsType, BulkNeedsType: bulk && needsType}
	if data.Bulk {
		// The count the redrive's own dry run gives (idemctl redrive
		// -dry-run): the records the filter selects beyond this page too.
		rf := f.redrive()
		rf.DryRun = true
		// The list stands without it: the page says the count is
		// unavailable, and the log why.
		events, tasks, err := d.cfg.Inbox.RedriveByKind(r.Context(), rf)
		if err != nil {
			d.cfg.Logger.Warn("dashboard: counting a redrive", "path", r.URL.Path, "error", err)
		} else {
			data.BulkCount = display.Kinds(events, tasks)
		}
	}
	if f.after.EventID != "" {
		data.First = pageURL(f.query())
	}
	if len(recs) == f.Limit {
		// A full page: is there a record after its last?
		last := recs[len(recs)-1]
		inf.After, inf.Limit = last.Position(), 1
		more, err := d.cfg.Inbox.List(r.Context(), inf)
		if err != nil {
			d.inboxError(w, r, "listing the inbox", err)
			return
		}
		if len(more) > 0 {
			q := f.query()
			q.Set("after", last.EventID)
			q.Set("after_received", last.ReceivedAt.UTC().Format(time.RFC3339Nano))
			data.Next = pageURL(q)
		}
	}
	d.render(w, r, http.StatusOK, "list", listHeading(f), data)
}

// pageURL is the list page with query q: a relative URL of the
// dashboard's own, which the template takes as it is.
func pageURL(q url.Values) template.URL {
	return template.URL("events?" + q.Encode())
}

// Noun is what f lists, singular: "event", "task", or "event and task".
// An object, an account or the state ignored selects events only: a task
// has neither, and is never ignored.
func (f listFilter) Noun() string {
	switch {
	case f.Kind != "":
		return string(f.Kind)
	case f.State == idempotency.InboxIgnored || f.Object != "" || f.Account != "":
		return "event"
	}
	return "event and task"
}

// Scope is what f selects besides its kind and state, as a list's heading
// and its bulk redrive's button name it: " of type invoice.paid of
// account acct_... received since 2026-11-20", each value as display.Line
// shows it.
func (f listFilter) Scope() string {
	var b strings.Builder
	if f.Type != "" {
		b.WriteString(" of type " + display.Line(f.Type))
	}
	if f.Object != "" {
		b.WriteString(" of object " + display.Line(f.Object))
		if f.Account == "" {
			b.WriteString(", under every account")
		}
	}
	if f.Account != "" {
		b.WriteString(" of account " + display.Line(f.Account))
	}
	if f.Since != "" {
		b.WriteString(" received since " + display.Line(f.Since))
	}
	if f.Until != "" {
		b.WriteString(" received before " + display.Line(f.Until))
	}
	return b.String()
}

// listHeading names what a list shows: "Dead-lettered tasks", "Failed
// events of account acct_...".
func listHeading(f listFilter) string {
	what := map[string]string{"event": "events", "task": "tasks"}[f.Noun()]
	if what == "" {
		what = "events and tasks"
	}
	adj := map[idempotency.InboxState]string{
		idempotency.InboxPending: "Pending", idempotency.InboxProcessing: "Processing",
		idempotency.InboxFailed: "Failed", idempotency.InboxDeadLetter: "Dead-lettered",
		idempotency.InboxProcessed: "Processed", idempotency.InboxSkipped: "Skipped",
		idempotency.InboxIgnored: "Ignored",
	}[f.State]
	if adj == "" {
		return strings.ToUpper(what[:1]) + what[1:] + f.Scope()
	}
	return adj + " " + what + f.Scope()
}

type eventData struct {
	ID        string
	Record    *idempotency.InboxRecord
	HasLedger bool // Config.Ledger is set, and this is not a task (tasks have no claim)
	Claim     *idempotency.EventRecord
	// HeldBy is, for a record still to be applied, what Inbox.HeldBy
	// says holds it back; HeldByUnread that it could not be read (on
	// PostgreSQL, a connection that may not write), the error logged.
	HeldBy       []idempotency.InboxHolder
	HeldByUnread bool
	// ShowPayloads is Config.ShowPayloads; Payload is the stored body,
	// indented when it is JSON, and empty when the inbox has none.
	// ArgsCleared is a finished task without its arguments: Prune
	// cleared them (Retention.Payloads), the row kept.
	ShowPayloads bool
	Payload      string
	ArgsCleared  bool
	// MaxAttempts is the inbox's (Inbox.MaxAttempts): the attempts a
	// record gets before it is dead-lettered, by which the page says how
	// many more a record still to be applied may have.
	MaxAttempts int
}

// event: one event's (or task's) inbox record, what holds it back while
// it is still to be applied, and its ledger record. The id
// comes from the dashboard's own links, as stored: it is not trimmed, since
// a task's key may begin or end with a space.
func (d *Dashboard) event(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		d.renderMessage(w, r, http.StatusBadRequest, "No event", "Give an event id: event?id=evt_...")
		return
	}
	data, err := d.lookup(r, id)
	if err != nil {
		d.inboxError(w, r, "looking an event up", err)
		return
	}
	data.MaxAttempts = d.cfg.Inbox.MaxAttempts()
	if data.Record == nil && data.Claim == nil {
		d.render(w, r, http.StatusNotFound, "event", id, data)
		return
	}
	if data.Record != nil && !data.Record.State.Final() {
		if data.HeldBy, err = d.cfg.Inbox.HeldBy(r.Context(), id); err != nil {
			// The record is shown without its holders.
			d.cfg.Logger.Error("dashboard: looking up what holds an event back", "path", r.URL.Path, "error", err)
			data.HeldByUnread = true
		}
	}
	if data.ShowPayloads = d.cfg.ShowPayloads; data.ShowPayloads && data.Record != nil {
		body, ok, err := d.cfg.Inbox.Payload(r.Context(), id)
		if err != nil {
			d.inboxError(w, r, "reading a payload", err)
			return
		}
		rec := data.Record
		switch {
		case ok:
			data.Payload = indentJSON(body)
		case rec.Kind == idempotency.KindTask && (rec.State == idempotency.InboxProcessed || rec.State == idempotency.InboxSkipped):
			data.ArgsCleared = true
		}
	}
	d.render(w, r, http.StatusOK, "event", id, data)
}

// lookup reads id's inbox record and, with a Ledger, its claim.
func (d *Dashboard) lookup(r *http.Request, id string) (eventData, error) {
	data := eventData{ID: id, HasLedger: d.cfg.Ledger != nil}
	rec, ok, err := d.cfg.Inbox.Lookup(r.Context(), id)
	if err != nil {
		return data, err
	}
	if ok {
		data.Record = &rec
		data.HasLedger = data.HasLedger && rec.Kind != idempotency.KindTask
	}
	if data.HasLedger {
		claim, ok, err := d.cfg.Ledger.LookupEvent(r.Context(), id)
		if err != nil {
			return data, err
		}
		if ok {
			data.Claim = &claim
		}
	}
	return data, nil
}

type searchData struct {
	Q        string
	Event    eventData                 // the event whose id is Q
	Object   []idempotency.InboxRecord // the inbox records of the object Q
	Claims   []idempotency.EventRecord // the ledger's records of the object Q
	Ledger   bool                      // Config.Ledger is set
	Searched bool
	// Limit is searchLimit, which Object and Claims may have reached:
	// there may be more, up to MaxLimit on the list page.
	Limit, MaxLimit int
}

// searchLimit is how many records of one object a search shows.
const searchLimit = 100

// search: an event (or task) by id, and the events of an object by its id.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("q")
	q := strings.TrimSpace(raw)
	data := searchData{Q: q, Ledger: d.cfg.Ledger != nil, Limit: searchLimit, MaxLimit: d.maxList}
	if q == "" {
		d.render(w, r, http.StatusOK, "search", "Search", data)
		return
	}
	data.Searched = true
	id := q
	if t := strings.TrimLeftFunc(raw, unicode.IsSpace); display.IsTaskID(t) {
		// A task's key may begin or end with a space: its id as it is
		// (white space pasted before it dropped), as the task's page
		// reads it.
		id, data.Q = t, t
	}
	var err error
	if data.Event, err = d.lookup(r, id); err != nil {
		d.inboxError(w, r, "searching", err)
		return
	}
	if data.Object, err = d.cfg.Inbox.List(r.Context(), idempotency.InboxFilter{ObjectID: q, Limit: searchLimit}); err != nil {
		d.inboxError(w, r, "searching", err)
		return
	}
	if d.cfg.Ledger != nil {
		if data.Claims, err = d.cfg.Ledger.ListEvents(r.Context(), idempotency.EventFilter{ObjectID: q, Limit: searchLimit}); err != nil {
			d.inboxError(w, r, "searching", err)
			return
		}
	}
	d.render(w, r, http.StatusOK, "search", "Search", data)
}

// indentJSON indents a JSON body for reading; anything else is shown as
// it is. Either way its C1 and bidirectional controls are \u escapes
// (display.JSON), which read the same in JSON, as idemctl shows them.
func indentJSON(body []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return display.JSON(string(body))
	}
	return display.JSON(buf.String())
}
