package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// states are the inbox states in the order idemctl prints them.
var states = idempotency.InboxStates()

var statsCommand = command{
	name:    "stats",
	args:    "[-json]",
	summary: "count the inbox's events and tasks by state, date the oldest pending and the last attempt",
	help: `Counts the inbox's events and tasks by state (Inbox.Stats), dates the
oldest one still to be applied (pending, processing or failed), and the
start of the newest attempt at an event or a task (none when the inbox
holds no row that was attempted): what an alert needs. Events pending
and no attempt for several poll intervals: no worker runs; recent
attempts and the oldest pending age growing: the workers fall behind.
The table's TASKS of ignored is "-": a task is never ignored. An inbox
that holds no event or task at all gets an "inbox empty:" line saying
why: in synchronous mode the events are in the ledger alone (ledger
lists them, show reads one's record there), and a delivery that failed
stored nothing; every count of events stays 0 there. A count marked
"~" is PostgreSQL's estimate: a store on PostgreSQL counts the rows of
a kind that are processed, skipped or ignored up to 50,000, then
estimates (the states still to apply and the dead letters are always
counted). With -json, one JSON document, each of its maps with every
state (tasks' ignored 0), and "estimated" only when a count is:

  {"events":{"pending":N,...},"tasks":{"pending":N,...},
   "oldest_pending":"RFC 3339" or null,"oldest_pending_age_seconds":N or null,
   "last_attempt":"RFC 3339" or null,"last_attempt_age_seconds":N or null,
   "dead_letters":N,"estimated":["processed",...]}`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		asJSON := fs.Bool("json", false, "one JSON document instead of a table")
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			_, in, closeFn, err := a.openInbox(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			st, err := in.Stats(ctx)
			if err != nil {
				return a.storeErr(err)
			}
			return a.writeStats(st, *asJSON)
		}
	},
}

// statsJSON is stats -json's document.
type statsJSON struct {
	Events        map[idempotency.InboxState]int `json:"events"`
	Tasks         map[idempotency.InboxState]int `json:"tasks"`
	OldestPending *time.Time                     `json:"oldest_pending"`
	OldestAgeSecs *int64                         `json:"oldest_pending_age_seconds"`
	LastAttempt   *time.Time                     `json:"last_attempt"`
	LastAgeSecs   *int64                         `json:"last_attempt_age_seconds"`
	DeadLetters   int                            `json:"dead_letters"`
	// Estimated lists the states whose counts are the store's estimates
	// (InboxStats.Estimated), in the order of states; absent when none.
	Estimated []idempotency.InboxState `json:"estimated,omitempty"`
}

// since is how long ago t was by the database's clock (dbNow), in whole
// seconds, and never negative (a replica's clock may be ahead of it).
func (a *app) since(t time.Time) time.Duration {
	return max(a.dbNow().Sub(t), 0).Round(time.Second)
}

// dated is t in UTC and its age in seconds for stats -json, both nil when
// t is zero.
func (a *app) dated(t time.Time) (*time.Time, *int64) {
	if t.IsZero() {
		return nil, nil
	}
	at, secs := t.UTC(), int64(a.since(t)/time.Second)
	return &at, &secs
}

// writeDated writes stats' line of label: t and its age, or none.
func (a *app) writeDated(label string, t time.Time) {
	if t.IsZero() {
		fmt.Fprintf(a.stdout, "%s: none\n", label)
		return
	}
	fmt.Fprintf(a.stdout, "%s: %s (%s ago)\n", label, formatTime(t), a.since(t))
}

func (a *app) writeStats(st idempotency.InboxStats, asJSON bool) error {
	events := map[idempotency.InboxState]int{}
	for _, s := range states {
		events[s] = st.Events(s)
	}
	if asJSON {
		doc := statsJSON{Events: events, Tasks: map[idempotency.InboxState]int{}, DeadLetters: st.Counts[idempotency.InboxDeadLetter]}
		for _, s := range states {
			doc.Tasks[s] = st.TaskCounts[s]
			if st.Estimated[s] {
				doc.Estimated = append(doc.Estimated, s)
			}
		}
		doc.OldestPending, doc.OldestAgeSecs = a.dated(st.OldestPending)
		doc.LastAttempt, doc.LastAgeSecs = a.dated(st.LastAttempt)
		return writeJSON(a.stdout, doc)
	}
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "STATE\tEVENTS\tTASKS")
	for _, s := range states {
		about := "" // an exact count
		if st.Estimated[s] {
			about = "~"
		}
		tasks := about + strconv.Itoa(st.TaskCounts[s])
		if !idempotency.KindTask.CanBe(s) {
			tasks = "-" // a task is never ignored: no count
		}
		fmt.Fprintf(tw, "%s\t%s%d\t%s\n", s, about, events[s], tasks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	a.writeDated("oldest pending", st.OldestPending)
	a.writeDated("last attempt", st.LastAttempt)
	if _, err := fmt.Fprintf(a.stdout, "dead letters: %d\n", st.Counts[idempotency.InboxDeadLetter]); err != nil {
		return err
	}
	if inboxEmpty(st) {
		_, err := fmt.Fprintf(a.stdout, "inbox empty: %s\n", display.EmptyInbox("idemctl ledger lists them, idemctl show evt_... reads one"))
		return err
	}
	return nil
}

// inboxEmpty reports that st counts no event and no task in any state
// (Counts has both).
func inboxEmpty(st idempotency.InboxStats) bool {
	for _, n := range st.Counts {
		if n != 0 {
			return false
		}
	}
	return true
}

var listCommand = command{
	name:    "list",
	args:    "[-state s] [-type t] [-object id] [-account acct] [-kind event|task] [-since t] [-until t] [-limit n] [-after id] [-json]",
	summary: "list inbox events and tasks, newest received first (no payloads)",
	help: `Lists the inbox's events and tasks that the flags select, newest received
first (Inbox.List), without their payloads: an aligned table, or with
-json one JSON document. The table's ACCOUNT is an event's connected
account, "-" for the platform's own events and for tasks (-object alone
lists an id under every account). Its DUE is when a record is due: a
pending or failed record's next attempt; a processing record's lease
end, "lease until T" while it runs by the database's clock, "lease
expired at T" once past (its worker died, and the next lease retries
it); "-" for a final record. Its last error is cut at 60 characters
(show, or -json, has it whole); an event stored ignored at receipt,
which has none, shows
"ignored at receipt: no handler for its type; see the event" (show says
why; -json keeps the stored last_error, ""). When no record matches, a
line says why that may be: nothing it selects was stored (a failed
delivery, an event answered ignored, a service in synchronous mode,
whose events the ledger command lists), or it was pruned. The JSON
document:

  {"records":[{"id":..,"kind":..,"type":..,"object_id":..,"account":..,
    "livemode":..,"api_version":..,"created":..,"state":..,"attempts":N,
    "redrives":N,"redriven_at":..,"last_error":..,"received_at":..,
    "attempted_at":..,"next_attempt_at":..,"finished_at":..,
    "lease_until":..}],"more":true|false}

Times are RFC 3339 in UTC, null when not set; lease_until is set while
a record is processing: when its worker's lease ends (past: the worker
died, and the next lease retries it). redrives counts the times a
redrive moved the record back to pending, redriven_at is when the last
did (null: never redriven); its attempts count again from 0 after each.
"more" says that more records match than -limit let through; the table
says so on stderr, with the -after that lists the next page (its id
quoted for a shell when a shell would split it or run part of it; left
out, saying why, when no command line gives the id as it is: one with a
control character, or an event's with a comma or white space at its
ends).
-after id lists the records after that one (the last of the page
before) in this order, with the same flags: page by page, every record
once, also while new ones arrive. An id the inbox does not have exits 3.

` + timesHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		var f inboxFlags
		f.register(fs, "keep", states)
		limit := fs.Int("limit", 100, fmt.Sprintf("the most records listed, 1 to %d", idempotency.MaxListLimit))
		after := fs.String("after", "", "list the records after this one, the last id of the page before: the next page")
		asJSON := fs.Bool("json", false, "one JSON document instead of a table")
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			kind, states, err := f.parse(a.now())
			if err != nil {
				return err
			}
			if err := f.checkTaskSelection(kind, "list"); err != nil {
				return err
			}
			_, in, closeFn, err := a.openInbox(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			since, until, err := timeRange(f.since, f.until, a.dbNow())
			if err != nil {
				return err
			}
			filter := idempotency.InboxFilter{
				Kind: kind, States: states, EventType: f.eventType, ObjectID: f.object, Account: f.account,
				Since: since, Until: until,
			}
			recs, more, err := listPage(ctx, *after, *limit, in.Lookup, "the inbox has no event or task with this id",
				func(ctx context.Context, after idempotency.InboxPosition, limit int) ([]idempotency.InboxRecord, error) {
					page := filter
					page.After, page.Limit = after, limit
					return in.List(ctx, page)
				})
			if err != nil {
				return a.storeErr(err)
			}
			if *asJSON {
				doc := listJSON{Records: make([]recordJSON, len(recs)), More: more}
				for i, r := range recs {
					doc.Records[i] = toRecordJSON(r)
				}
				return writeJSON(a.stdout, doc)
			}
			if len(recs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no inbox record matches: "+noInboxRecord)
				return err
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "ID\tKIND\tTYPE\tOBJECT\tACCOUNT\tSTATE\tATTEMPTS\tRECEIVED\tDUE\tLAST ERROR")
			now := a.dbNow()
			for _, r := range recs {
				lastError := truncate(display.ListedLastError(r.State == idempotency.InboxIgnored, r.LastError), 60) // as the help says
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", display.Line(r.EventID), r.Kind, display.Line(r.EventType), dash(r.ObjectID),
					dash(r.Account), r.State, r.Attempt, formatTime(r.ReceivedAt), due(r, now), dash(lastError))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if more {
				a.moreLine("list", *limit, recs[len(recs)-1].EventID)
			}
			return nil
		}
	},
}

// noInboxRecord says why the inbox may hold no record a list selects, as
// noLedgerRecord says it of the ledger.
const noInboxRecord = "no event or task it selects is in the inbox (a delivery that failed, answered 5xx, stores nothing, " +
	"one answered ignored, of a type without a handler, is stored only with Config.RecordIgnored, " +
	"and a service in synchronous mode keeps its events in the ledger alone: idemctl ledger), " +
	"or it finished longer ago than the inbox keeps a finished event (Retention.Payloads, 7 days by default) and was pruned since"

// checkLimit refuses a -limit of list or ledger outside 1 to
// MaxListLimit.
func checkLimit(limit int) error {
	if limit < 1 || limit > idempotency.MaxListLimit {
		return usageError("-limit %d: want 1 to %d", limit, idempotency.MaxListLimit)
	}
	return nil
}

// listPage lists a page of records, as list and ledger page: at most
// limit of those list gives after the record whose id is after (trimmed
// as trimID does; "": from the first), which lookup reads (an id it does
// not have exits 3, notFound saying whose), and whether more match than
// limit let through: a full page with a record after its last.
func listPage[R interface{ Position() P }, P any](ctx context.Context, after string, limit int,
	lookup func(context.Context, string) (R, bool, error), notFound string,
	list func(ctx context.Context, after P, limit int) ([]R, error),
) (recs []R, more bool, err error) {
	var from P
	if after = trimID(after); after != "" {
		rec, ok, err := lookup(ctx, after)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, notFoundError("-after %s: %s", display.Line(after), notFound)
		}
		from = rec.Position()
	}
	recs, err = list(ctx, from, limit)
	if err != nil || len(recs) < limit {
		return recs, false, err
	}
	// A full page: is there a record after its last?
	next, err := list(ctx, recs[len(recs)-1].Position(), 1)
	return recs, len(next) > 0, err
}

// moreLine says on stderr that more records match than -limit let the
// command list, with the -after of the next page: last, the id of the
// last record listed, quoted for a shell, or, when no command line gives
// it as it is, why not.
func (a *app) moreLine(cmd string, limit int, last string) {
	next := "-after the last id of -json's records (" + display.IDWordNote + ")"
	if w := display.IDWord(last); w != "" {
		next = "-after " + w
	}
	fmt.Fprintf(a.stderr, "idemctl: %s: more than %s; next: %s, or raise -limit or narrow the selection\n",
		cmd, display.Count(limit, "record matches", "records match"), next)
}

// inboxFlags are the selectors list and redrive share.
type inboxFlags struct {
	states       listFlag
	offered      []idempotency.InboxState // the states -state takes
	eventType    string
	object       string
	account      string
	kind         string
	since, until timeFlag
}

// register adds the flags to fs; -state offers offered, the states verb
// accepts.
func (f *inboxFlags) register(fs *flag.FlagSet, verb string, offered []idempotency.InboxState) {
	f.offered = offered
	fs.Var(&f.states, "state", verb+" events in these states (repeatable, or a comma list): "+joinNames(offered))
	fs.StringVar(&f.eventType, "type", "", verb+" events of this type")
	fs.StringVar(&f.object, "object", "", verb+" the events of this object (data.object.id), under every connected account unless -account")
	fs.StringVar(&f.account, "account", "", verb+" the events of this connected account (the event's account)")
	fs.StringVar(&f.kind, "kind", "", verb+" only events (event) or only tasks (task)")
	fs.Var(&f.since, "since", verb+" events received at or after this time")
	fs.Var(&f.until, "until", verb+" events received before this time")
}

// parse validates the kind and the states, and reads -type, -object and
// -account without the spaces around them, as the dashboard's lists and
// forms read them: a pasted " cus_123" selects cus_123. It refuses a
// -since not before -until as checkTimes does, a duration measured back
// from now.
func (f *inboxFlags) parse(now time.Time) (idempotency.InboxKind, []idempotency.InboxState, error) {
	f.eventType, f.object, f.account = pasted(f.eventType), pasted(f.object), pasted(f.account)
	var kind idempotency.InboxKind
	switch f.kind {
	case "", string(idempotency.KindEvent), string(idempotency.KindTask):
		kind = idempotency.InboxKind(f.kind)
	default:
		return "", nil, usageError("-kind %q: want event or task", f.kind)
	}
	var sts []idempotency.InboxState
	for _, s := range f.states {
		if !slices.Contains(states, idempotency.InboxState(s)) {
			return "", nil, usageError("-state %q: want one of %s", s, joinNames(f.offered))
		}
		sts = append(sts, idempotency.InboxState(s))
	}
	if err := checkTimes(f.since, f.until, now); err != nil {
		return "", nil, err
	}
	return kind, sts, nil
}

// checkTimes refuses, before idemctl connects, a -since not before
// -until, a range that holds no time, where no clock changes their order:
// two times, or two durations (printed measured back from now). A
// duration beside a time is ordered on the database's clock, which the
// selection measures the duration on: timeRange judges it once connected.
func checkTimes(since, until timeFlag, now time.Time) error {
	if since.rel != until.rel {
		return nil
	}
	_, _, err := timeRange(since, until, now)
	return err
}

// timeRange is -since and -until measured back from now, the database's
// clock (dbNow) in a command connected to it, the zero time for one not
// given. It refuses a -since not before -until, a range that holds no
// time.
func timeRange(since, until timeFlag, now time.Time) (time.Time, time.Time, error) {
	s, u := since.at(now), until.at(now)
	if since.set() && until.set() && !s.Before(u) {
		return time.Time{}, time.Time{}, usageError("-since (%s) is not before -until (%s)", formatTime(s), formatTime(u))
	}
	return s, u, nil
}

// checkTaskSelection refuses -account or -object with -kind task, which
// selects records that have neither; verb is what the command does with
// the events they select.
func (f *inboxFlags) checkTaskSelection(kind idempotency.InboxKind, verb string) error {
	switch {
	case kind == idempotency.KindTask && f.account != "":
		return usageError("-kind task with -account: a task has no account; -account and -object %s events", verb)
	case kind == idempotency.KindTask && f.object != "":
		return usageError("-kind task with -object: a task has no object; -account and -object %s events", verb)
	}
	return nil
}

var showCommand = command{
	name:    "show",
	args:    "[-payload] [-json] <event-id>",
	summary: "show an event's inbox record, what holds it back, and its ledger record",
	help: `Shows what the store has of one event (or task, by its id task:<name>:<key>,
taken as it is; an event's id is read without the white space around it):
its inbox record (Inbox.Lookup: state, attempts, how often it was
redriven and when last, last error, received, attempted, next attempt
and finished times) and its ledger record (LookupEvent: the outcome its
claim committed with, and when). The payload, which may hold customer
data, is shown only with -payload.

An event in the inbox whose claim another delivery made (a synchronous
Handler applied it, and its retry reached an inbox Handler, which stores
it again; or its earlier copy was pruned from the inbox) shows the
ledger's "claimed by" line: its inbox attempts find the claim and apply
nothing, though the inbox records them processed. With -json, the
ledger's received_at then differs from the inbox's.

An ignored event with no last error was stored ignored at receipt: the
Handler that received it (or Recover) had no handler for its type and
stores such an event only with Config.RecordIgnored, recording no reason.
Its "last error" line says so: "ignored at receipt: no handler for its
type in the process that received it (Config.RecordIgnored stores it)";
-json keeps the stored last_error, "". One a worker recorded ignored
(past InboxConfig.RetryUnhandledFor) shows its reason.

An event still to be applied (pending, failed, processing) also shows what
holds it back now (Inbox.HeldBy): the events of its object created before
it that are still to be applied, and a later one a worker is applying,
each with its state, attempts and next attempt or lease end ("lease
until", or, once past by the database's clock, "lease expired at"). Look
at, fix or redrive those first: the event waits behind them. "-" means
nothing holds it: it is due at its next attempt (past by more than five
minutes, "overdue since": no worker took it, the workers are down, busy
or cut off from the database), or, processing, a worker
holds it under a lease until the time given, or that lease expired then (its
worker died, hung or lost its connection) and the next lease retries it,
or dead-letters it after its last attempt. A processing event that is
held back is one whose lease expired (a worker applying an event is held
back by nothing): a "lease" line after its holders says so, and that the
next lease retries it once nothing holds it back, or dead-letters it
after its last attempt without waiting. On PostgreSQL this needs a
connection that may write (Inbox.HeldBy probes row locks); on a read-only
one, or a standby, show prints the record with "held by ? (could not be
read: ...)", says so on stderr, and exits 0.

Exits 3 when neither the inbox nor the ledger has the id, and says why
that may be: the event did not reach this store; or its delivery failed,
which stores nothing (answered 5xx: in synchronous mode a handler's
error, and Stripe sends it again); or a process without a
handler for its type answered it ignored, which stores nothing without
Config.RecordIgnored; or it was applied longer ago than the ledger keeps
a claimed id (Retention.EventIDs, 45 days by default) and pruned since:
the service's own data then tells whether it was applied. With -json, one
JSON document: {"id":..,"inbox":<a list record> or null,
"held_by":[<a list record> with "earlier":true|false]
([] when nothing holds it back, null when not in the inbox or when it
could not be read: then "held_by_error":.. says why),
"ledger":{"outcome":..,"skip_reason":..,"received_at":..,"processed_at":..}
or null, "payload":<the event's JSON> (with -payload; null when not stored)}.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		payload := fs.Bool("payload", false, "also print the stored payload (may hold customer data)")
		asJSON := fs.Bool("json", false, "one JSON document instead of text")
		return func(ctx context.Context, a *app, args []string) error {
			if len(args) != 1 {
				return usageError("want one event id, got %d arguments", len(args))
			}
			id := trimID(args[0])
			if err := checkEventID(id); err != nil {
				return usageError("%v", err)
			}
			store, in, closeFn, err := a.openInbox(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			rec, inInbox, err := in.Lookup(ctx, id)
			if err != nil {
				return a.storeErr(err)
			}
			ledger, claimed, err := store.LookupEvent(ctx, id)
			if err != nil {
				return a.storeErr(err)
			}
			if !inInbox && !claimed {
				return notFoundError("%s: neither the inbox nor the ledger has it: %s", id, display.Unknown)
			}
			var holders []idempotency.InboxHolder
			var heldByErr error // the record is shown without its holders
			if inInbox && !rec.State.Final() {
				if holders, heldByErr = in.HeldBy(ctx, id); heldByErr != nil {
					if ctx.Err() != nil {
						return a.storeErr(heldByErr)
					}
					fmt.Fprintf(a.stderr, "idemctl: show: what holds %s back could not be read: %s\n", display.Line(id), display.Line(heldByErr.Error()))
				}
			}
			var body []byte
			var hasBody bool
			if *payload {
				if body, hasBody, err = in.Payload(ctx, id); err != nil {
					return a.storeErr(err)
				}
			}
			if *asJSON {
				doc := showJSON{ID: id}
				if inInbox && rec.Kind == idempotency.KindTask {
					doc.IdempotencyKey = display.TaskIdempotencyKey(id, rec.EventType)
				}
				if inInbox {
					r := toRecordJSON(rec)
					doc.Inbox = &r
					if heldByErr != nil {
						doc.HeldByError = heldByErr.Error()
					} else {
						doc.HeldBy = make([]holderJSON, len(holders))
						for i, h := range holders {
							doc.HeldBy[i] = holderJSON{recordJSON: toRecordJSON(h.InboxRecord), Earlier: h.Earlier}
						}
					}
				}
				if claimed {
					doc.Ledger = &ledgerJSON{Outcome: string(ledger.Outcome), SkipReason: ledger.SkipReason,
						ReceivedAt: optionalTime(ledger.ReceivedAt), ProcessedAt: optionalTime(ledger.ProcessedAt)}
				}
				switch {
				case hasBody:
					doc.Payload = json.RawMessage(body)
				case *payload:
					doc.Payload = json.RawMessage("null") // asked for, not stored
				}
				return writeJSON(a.stdout, doc)
			}
			return a.writeShow(id, rec, inInbox, holders, heldByErr, ledger, claimed, *payload, body, hasBody)
		}
	},
}

// showJSON is show -json's document.
type showJSON struct {
	ID string `json:"id"`
	// IdempotencyKey is a task's (TaskRun.IdempotencyKey); an event has
	// none, and the field is left out.
	IdempotencyKey string      `json:"idempotency_key,omitempty"`
	Inbox          *recordJSON `json:"inbox"`
	// HeldBy is what Inbox.HeldBy says: [] when nothing holds the event
	// back, null when it is not in the inbox or HeldByError says why it
	// could not be read.
	HeldBy      []holderJSON    `json:"held_by"`
	HeldByError string          `json:"held_by_error,omitempty"`
	Ledger      *ledgerJSON     `json:"ledger"`
	Payload     json.RawMessage `json:"payload,omitempty"` // with -payload only; null when not stored
}

// holderJSON is an event that holds the shown one back: its record and
// whether it sorts before it.
type holderJSON struct {
	recordJSON
	Earlier bool `json:"earlier"`
}

type ledgerJSON struct {
	Outcome     string     `json:"outcome"`
	SkipReason  string     `json:"skip_reason"`
	ReceivedAt  *time.Time `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
}

func (a *app) writeShow(id string, rec idempotency.InboxRecord, inInbox bool, holders []idempotency.InboxHolder, heldByErr error, ledger idempotency.EventRecord, claimed, wantBody bool, body []byte, hasBody bool) error {
	var l showLines
	l.add("id", display.Line(id))
	switch {
	case inInbox && rec.Kind == idempotency.KindTask:
		// A task's record holds its name and key, and when its event's
		// transaction enqueued it; the event's other fields are empty.
		l.add("kind", string(rec.Kind))
		l.add("name", display.Line(rec.EventType))
		l.add("key", dash(display.Line(display.TaskKey(id, rec.EventType))))
		// What the provider's log finds the task's requests by.
		l.add("idempotency key", display.TaskIdempotencyKey(id, rec.EventType))
		l.add("enqueued", formatTime(rec.Created))
	case inInbox:
		l.add("kind", string(rec.Kind))
		l.add("type", display.Line(rec.EventType))
		l.add("object", dash(rec.ObjectID))
		l.add("account", dash(rec.Account))
		l.add("livemode", strconv.FormatBool(rec.Livemode))
		l.add("api version", dash(rec.APIVersion))
		l.add("created", formatTime(rec.Created))
	}
	if inInbox {
		l.heading("")
		l.heading("inbox")
		l.add("  state", string(rec.State))
		attempts := strconv.Itoa(rec.Attempt)
		if rec.Kind == idempotency.KindTask && rec.Attempt > 1 && (rec.State == idempotency.InboxProcessed || rec.State == idempotency.InboxSkipped) {
			// A task's attempt does not roll back as an event's does.
			attempts += " (" + display.TaskRepeated + ")"
		}
		l.add("  attempts", attempts)
		l.add("  redriven", display.Redriven(rec.Redrives, formatTime(rec.RedrivenAt)))
		l.add("  last error", dash(display.LastError(rec.State == idempotency.InboxIgnored, rec.LastError)))
		l.add("  received", formatTime(rec.ReceivedAt))
		l.add("  attempted", formatTime(rec.AttemptedAt))
		l.add("  next attempt", formatTime(rec.NextAttemptAt))
		l.add("  finished", formatTime(rec.FinishedAt))
		if !rec.State.Final() {
			l.addHolders(rec, a.dbNow(), holders, heldByErr)
		}
	} else {
		l.add("type", display.Line(ledger.EventType))
		l.add("object", dash(ledger.ObjectID))
		l.add("account", dash(ledger.Account))
		l.add("livemode", strconv.FormatBool(ledger.Livemode))
		l.heading("")
		l.add("inbox", "not in the inbox (delivered synchronously, or pruned)")
	}
	l.heading("")
	switch {
	case claimed:
		l.heading("ledger")
		l.add("  outcome", string(ledger.Outcome))
		if ledger.SkipReason != "" {
			l.add("  skip reason", display.Line(ledger.SkipReason))
		}
		// An inbox attempt claims with its row's received time: another
		// one is the claim of another delivery, which this row's attempts
		// find and apply nothing for.
		if inInbox && rec.Kind == idempotency.KindEvent && !ledger.ReceivedAt.Equal(rec.ReceivedAt) {
			l.add("  claimed by", "another delivery (received "+formatTime(ledger.ReceivedAt)+
				": a synchronous Handler, or a copy pruned from the inbox), not this inbox row: the inbox's attempts apply nothing")
		}
		l.add("  processed at", formatTime(ledger.ProcessedAt))
	case inInbox && rec.Kind == idempotency.KindTask:
		l.add("ledger", "- (a task has no ledger record: its inbox row is its record)")
	default:
		l.add("ledger", "not claimed: no transaction has applied it")
	}
	if err := l.write(a.stdout); err != nil {
		return err
	}
	if !wantBody {
		return nil
	}
	if !hasBody {
		why := "not stored (not in the inbox, or pruned)"
		if inInbox && rec.Kind == idempotency.KindTask && (rec.State == idempotency.InboxProcessed || rec.State == idempotency.InboxSkipped) {
			why = "cleared (a finished task's arguments go -payloads after it finished; its row stays)"
		}
		_, err := fmt.Fprintln(a.stdout, "\npayload: "+why)
		return err
	}
	fmt.Fprintln(a.stdout, "\npayload:")
	_, err := fmt.Fprintf(a.stdout, "%s\n", display.JSON(string(body)))
	return err
}

// showLines are show's lines, each a label and its value, the values
// aligned in one column; a line without a value (a section's heading, or
// the empty line between sections) is its label alone, not padded. An
// empty value is shown as "-", so that no such line reads as a heading.
type showLines [][2]string

// add adds a line and its value, "-" when the value is empty: only a
// heading has none.
func (l *showLines) add(label, value string) {
	*l = append(*l, [2]string{label, cmp.Or(value, "-")})
}

// heading adds a section's heading, or, without a label, the empty line
// between sections.
func (l *showLines) heading(label string) { *l = append(*l, [2]string{label, ""}) }

// write writes the lines to w, each value two spaces after the longest
// label, as a table of idemctl's pads it.
func (l showLines) write(w io.Writer) error {
	width := 0
	for _, ln := range l {
		if ln[1] != "" {
			width = max(width, len(ln[0]))
		}
	}
	var b strings.Builder
	for _, ln := range l {
		b.WriteString(ln[0])
		if ln[1] != "" {
			b.WriteString(strings.Repeat(" ", width+2-len(ln[0])) + ln[1])
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// addHolders adds show's "held by" lines of rec: one per holder, then,
// processing, its own lease; that nothing holds it back; or that err kept
// them from being read.
func (l *showLines) addHolders(rec idempotency.InboxRecord, now time.Time, holders []idempotency.InboxHolder, err error) {
	const label = "  held by"
	if err != nil {
		l.add(label, "? (could not be read: "+display.Line(err.Error())+")")
		return
	}
	if len(holders) == 0 {
		l.add(label, "- ("+unheld(rec, now)+")")
		return
	}
	for i, h := range holders {
		when := "next attempt " + formatTime(h.NextAttemptAt)
		if h.State == idempotency.InboxProcessing {
			when = leaseEnd(h.LeaseUntil, now)
		}
		order := "created before it"
		if !h.Earlier {
			order = "created after it, a worker is applying it"
		}
		lbl := label
		if i > 0 {
			lbl = ""
		}
		l.add(lbl, fmt.Sprintf("%s (%s, attempt %d, %s; %s)", display.Line(h.EventID), h.State, h.Attempt, when, order))
	}
	// Only an event whose lease expired is processing and held back: its
	// own lease is said after what holds it.
	if rec.State == idempotency.InboxProcessing {
		l.add("  lease", leaseOf(rec, now, true))
	}
}

// leaseEnd is a holder's lease end: "lease until T" while it runs by
// now, "lease expired at T" once past (its worker died, hung or lost its
// connection, or is still committing in time).
func leaseEnd(until, now time.Time) string {
	if until.After(now) {
		return "lease until " + formatTime(until)
	}
	return "lease expired at " + formatTime(until)
}

// due is when rec is due, as list's DUE column says it: a pending or
// failed record's next attempt, a processing record's lease end as
// leaseEnd says it by now (once past, the next lease retries it), "-" for
// a final record.
func due(rec idempotency.InboxRecord, now time.Time) string {
	if rec.State == idempotency.InboxProcessing {
		return leaseEnd(rec.LeaseUntil, now)
	}
	return formatTime(rec.NextAttemptAt)
}

// unheld says that nothing holds an event back, and what it waits for:
// its next attempt, or, past it by more than display.OverdueAfter by now,
// workers, which took it not when it came due; or, processing (it has no
// next attempt), its worker, under a lease that runs or, by now, expired
// (the worker died or hung).
func unheld(rec idempotency.InboxRecord, now time.Time) string {
	switch {
	case rec.State == idempotency.InboxProcessing:
		return "nothing: " + leaseOf(rec, now, false)
	case display.Overdue(rec.NextAttemptAt, now):
		return "nothing, yet overdue since " + formatTime(rec.NextAttemptAt) +
			": no worker took it when it came due; the workers are down, busy or cut off from the database: idemctl stats says when one last started an attempt"
	}
	return "nothing: due at its next attempt"
}

// leaseOf is display.Lease of rec, processing, by now; held says that
// events of its object hold it back.
func leaseOf(rec idempotency.InboxRecord, now time.Time, held bool) string {
	return display.Lease(formatTime(rec.LeaseUntil), rec.LeaseUntil.After(now), held)
}

// listJSON is list -json's document.
type listJSON struct {
	Records []recordJSON `json:"records"`
	More    bool         `json:"more"`
}

// recordJSON is an inbox record in -json output: stable names, every field
// present, null for a time not set.
type recordJSON struct {
	ID            string     `json:"id"`
	Kind          string     `json:"kind"`
	Type          string     `json:"type"`
	ObjectID      string     `json:"object_id"`
	Account       string     `json:"account"`
	Livemode      bool       `json:"livemode"`
	APIVersion    string     `json:"api_version"`
	Created       *time.Time `json:"created"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	Redrives      int        `json:"redrives"`
	RedrivenAt    *time.Time `json:"redriven_at"`
	LastError     string     `json:"last_error"`
	ReceivedAt    *time.Time `json:"received_at"`
	AttemptedAt   *time.Time `json:"attempted_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	LeaseUntil    *time.Time `json:"lease_until"`
}

func toRecordJSON(r idempotency.InboxRecord) recordJSON {
	return recordJSON{
		ID: r.EventID, Kind: string(r.Kind), Type: r.EventType, ObjectID: r.ObjectID, Account: r.Account,
		Livemode: r.Livemode, APIVersion: r.APIVersion, Created: optionalTime(r.Created), State: string(r.State),
		Attempts: r.Attempt, Redrives: r.Redrives, RedrivenAt: optionalTime(r.RedrivenAt), LastError: r.LastError, ReceivedAt: optionalTime(r.ReceivedAt),
		AttemptedAt: optionalTime(r.AttemptedAt), NextAttemptAt: optionalTime(r.NextAttemptAt), FinishedAt: optionalTime(r.FinishedAt),
		LeaseUntil: optionalTime(r.LeaseUntil),
	}
}

// optionalTime is t in UTC, nil for the zero time.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// formatTime writes t in RFC 3339, UTC, to the second; "-" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, display.JSON(buf.String()))
	return err
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// dash is s as display.Line prints it, or "-" when that is empty.
func dash(s string) string {
	if s = display.Line(s); s == "" {
		return "-"
	}
	return s
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// joinNames writes states or outcomes as the flags take them: a comma
// list.
func joinNames[T ~string](names []T) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, ", ")
}

// noArgs refuses arguments to a command that takes none.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usageError("unexpected argument %q", args[0])
	}
	return nil
}
