package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency"
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
}

type overviewData struct {
	Events, Tasks   []stateCount
	OldestPending   time.Time
	Failed, Dead    []idempotency.InboxRecord
	MoreFailed      bool
	MoreDead        bool
	FailedN, DeadN  int
	EventsN, TasksN int
}

// overview: counts by state for events and tasks, the oldest pending age,
// and the failed and dead-lettered records.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.cfg.Inbox.Stats(ctx)
	if err != nil {
		d.inboxError(w, r, "reading inbox stats", err)
		return
	}
	data := overviewData{OldestPending: st.OldestPending}
	for _, s := range states {
		events, tasks := st.Events(s), st.TaskCounts[s]
		data.Events = append(data.Events, stateCount{s, events})
		data.Tasks = append(data.Tasks, stateCount{s, tasks})
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
// account, limit.
type listFilter struct {
	Kind     idempotency.InboxKind
	State    idempotency.InboxState // one state, or empty for all
	Type     string
	Object   string
	Account  string
	Limit    int
	AllKinds []idempotency.InboxKind
	States   []idempotency.InboxState
}

// defaultListLimit is the list page's default Limit, and maxListLimit its
// largest: a page of more rows is no longer readable.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// parseListFilter reads the list page's query; a value it does not know
// is an error for the operator to see (a typo must not list everything).
func parseListFilter(r *http.Request) (listFilter, string) {
	q := r.URL.Query()
	f := listFilter{
		Kind: idempotency.InboxKind(q.Get("kind")), State: idempotency.InboxState(q.Get("state")),
		Type: strings.TrimSpace(q.Get("type")), Object: strings.TrimSpace(q.Get("object")),
		Account:  strings.TrimSpace(q.Get("account")),
		Limit:    defaultListLimit,
		AllKinds: []idempotency.InboxKind{idempotency.KindEvent, idempotency.KindTask},
		States:   states,
	}
	if !isKind(f.Kind) {
		return f, "Unknown kind: use event or task."
	}
	if f.State != "" && !slices.Contains(states, f.State) {
		return f, "Unknown state."
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			return f, "The limit must be a number from 1 to " + strconv.Itoa(maxListLimit) + "."
		}
		f.Limit = n
	}
	return f, ""
}

type listData struct {
	Filter  listFilter
	Records []idempotency.InboxRecord
	Full    bool // as many records as the limit: there may be more
	// Bulk is whether the page offers to redrive everything the filter
	// selects: a redrivable state, and no object or account (Redrive has
	// no such filter).
	Bulk bool
}

// list: the records of one kind, state, type, object and account, newest
// first.
func (d *Dashboard) list(w http.ResponseWriter, r *http.Request) {
	f, bad := parseListFilter(r)
	if bad != "" {
		d.renderMessage(w, r, http.StatusBadRequest, "Bad filter", bad)
		return
	}
	inf := idempotency.InboxFilter{Kind: f.Kind, EventType: f.Type, ObjectID: f.Object, Account: f.Account, Limit: f.Limit}
	if f.State != "" {
		inf.States = []idempotency.InboxState{f.State}
	}
	recs, err := d.cfg.Inbox.List(r.Context(), inf)
	if err != nil {
		d.inboxError(w, r, "listing the inbox", err)
		return
	}
	data := listData{
		Filter: f, Records: recs, Full: len(recs) == f.Limit,
		Bulk: d.cfg.AllowRedrive && f.State.Redrivable() && f.Object == "" && f.Account == "" && len(recs) > 0,
	}
	d.render(w, r, http.StatusOK, "list", listHeading(f), data)
}

// listHeading names what a list shows: "Dead-lettered tasks".
func listHeading(f listFilter) string {
	what := "events and tasks"
	switch f.Kind {
	case idempotency.KindEvent:
		what = "events"
	case idempotency.KindTask:
		what = "tasks"
	}
	adj := map[idempotency.InboxState]string{
		idempotency.InboxPending: "Pending", idempotency.InboxProcessing: "Processing",
		idempotency.InboxFailed: "Failed", idempotency.InboxDeadLetter: "Dead-lettered",
		idempotency.InboxProcessed: "Processed", idempotency.InboxSkipped: "Skipped",
		idempotency.InboxIgnored: "Ignored",
	}[f.State]
	if adj == "" {
		return strings.ToUpper(what[:1]) + what[1:]
	}
	return adj + " " + what
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
	ShowPayloads bool
	Payload      string
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
		if ok {
			data.Payload = indentJSON(body)
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
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := searchData{Q: q, Ledger: d.cfg.Ledger != nil, Limit: searchLimit, MaxLimit: maxListLimit}
	if q == "" {
		d.render(w, r, http.StatusOK, "search", "Search", data)
		return
	}
	data.Searched = true
	var err error
	if data.Event, err = d.lookup(r, q); err != nil {
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
// it is.
func indentJSON(body []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return string(body)
	}
	return buf.String()
}
