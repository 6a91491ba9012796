package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
	"github.com/seed-a84bb619/idempotency/internal/keytext"
)

var redriveCommand = command{
	name:    "redrive",
	args:    "(-id id... | -type t | -object id | -account acct | -since t | -until t | -all) [-state s] [-kind k] [-dry-run] [-json]",
	summary: "move dead-lettered (or failed) events and tasks, or ignored events, back to pending with a fresh attempt budget",
	help: `Moves the events and tasks the flags select back to pending with a
fresh attempt budget (Inbox.RedriveByKind), dead-lettered ones by default;
the service's workers then apply them as new. Fix the cause first.

-state ignored takes the events recorded ignored, for a release with the
handler for their type to apply: those a release without it stored
(Config.RecordIgnored), and those its workers retried without it for
InboxConfig.RetryUnhandledFor (an hour) after they were received. After a
rolling deploy that adds a type, -state ignored -type <type> -since <the
deploy's start>. One is applied after the later events of its
object applied already, and holds back those still pending. A worker
without the handler fails it until InboxConfig.RetryUnhandledFor (an hour)
after it was received, holding its object back, then records it ignored
again, its last error saying why (show prints it); one the ledger has a
claim of (a synchronous Handler with RecordIgnored, or another delivery,
claimed it) is recorded processed and not applied. -state ignored needs
-type or -id: with RecordIgnored the ignored events are also those of every
type no release handles, and one of them redriven less than
RetryUnhandledFor after it was received fails until then, holding the later
events of its object back (forget refuses it while it is failed); -all, or
-since or -until alone, would take them too, and is refused (exit 2);
-account or -object do not name a type either (a connected account's, or
an object's, ignored events are also those of types no release handles).
A task is never ignored: -kind task with -state ignored is refused.

-account acct_... redrives one connected account's events: after it lost
access (403 account_invalid) and reconnected, its dead letters and no
other account's, with -state dead_letter,failed those still retried too
(a failed one holds back the account's newer events of its object until
its next attempt, hours away after hours of refusals). -object id redrives the events of one object
(data.object.id), under every connected account and the platform's
unless -account is given too (Stripe reuses some ids, a capability's
card_payments, in every account). A task has neither: -kind task with
-account or -object is refused (exit 2).

It refuses to run without a selector (-id, -type, -object, -account,
-since, -until) unless -all is given: -state and -kind narrow a selection
but do not make one.
-dry-run counts the events and tasks that would move and moves none;
counting tasks, a line under the count says to look at the provider's
log first, as a task's failed attempt may have had its effect all the
same, and its redrive may send the email again. Without
-kind, events and tasks move in one statement: both, or neither when it
fails.
It prints how many events and tasks (with -kind, of that kind) moved, or
would, after a line for each -id it does not move saying why: not found,
or its state, kind, type, object, account or received time not selected
(a failed event needs -state failed, an ignored one -state ignored).
Without -state, a selection by -type, -object, -account, -since, -until
or -all takes dead letters alone, and a line after the count says how
many failed events and tasks it selects besides, when there are any
("not redriven, failed: 2 events of this selection"): a failing handler
fixed before its events were dead-lettered leaves them failed, and
-state failed (or dead_letter,failed) takes them.
Exits 3 when an -id was not found (the others are redriven).

With -json the report is one JSON document: {"events":N,"tasks":N,
"dry_run":bool,"not_redriven":[{"id":..,"reason":..,"not_found":bool}]}:
events and tasks moved (or, with -dry-run, that would move), and each -id
not moved with why, in the order given; the failed ones left are not
counted in it.

` + timesHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		var f inboxFlags
		f.register(fs, "redrive", slices.DeleteFunc(slices.Clone(states), func(s idempotency.InboxState) bool { return !s.Redrivable() }))
		var ids idsFlag
		fs.Var(&ids, "id", "redrive these event ids (repeatable, or a comma list), or this task's id as it is (task:<name>:<key>, alone in its -id: refused in a list or after white space)")
		all := fs.Bool("all", false, "redrive every event and task in -state (dead_letter by default; not -state ignored), with no other selector; -kind narrows it to one kind")
		dryRun := fs.Bool("dry-run", false, "count the events and tasks that would move; move none")
		asJSON := fs.Bool("json", false, "the report as one JSON document")
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			kind, sts, err := f.parse(a.now())
			if err != nil {
				return err
			}
			for _, s := range sts {
				if !s.Redrivable() {
					return usageError("-state %s: only %s events are redriven", s, joinNames(f.offered))
				}
			}
			if err := f.checkTaskSelection(kind, "redrive"); err != nil {
				return err
			}
			switch ignored := slices.Contains(sts, idempotency.InboxIgnored); {
			case ignored && !kind.CanBe(idempotency.InboxIgnored):
				return usageError("-state ignored with -kind task: a task is never ignored; -state ignored redrives events")
			case ignored && len(ids) == 0 && f.eventType == "":
				return usageError("-state ignored needs -type or -id: with RecordIgnored the ignored events are also those of every type " +
					"no release handles, and one redriven less than InboxConfig.RetryUnhandledFor (an hour) after it was received " +
					"fails until then, holding back the later events of its object")
			case ignored && *all:
				return usageError("-state ignored takes no -all: -type or -id names the ignored events to redrive, " +
					"and -all would take those of every type no release handles")
			}
			selected := len(ids) > 0 || f.eventType != "" || f.object != "" || f.account != "" || f.since.set() || f.until.set()
			if selected && *all {
				return usageError("-all redrives every %s: it takes no -id, -type, -object, -account, -since or -until", allRedrives(kind, sts))
			}
			if !selected && !*all {
				return usageError("no selector: pass -id, -type, -object, -account, -since or -until, or -all to redrive every %s", allRedrives(kind, sts))
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
			filter := idempotency.RedriveFilter{
				Kind: kind, EventIDs: ids, EventType: f.eventType, ObjectID: f.object, Account: f.account,
				Since: since, Until: until, States: sts, DryRun: *dryRun,
			}
			// Before the redrive, which makes the moved ones pending: each
			// id it will not move, and why.
			unmoved, err := a.notRedriven(ctx, in, filter)
			if err != nil {
				return err
			}
			var missing []string
			for _, u := range unmoved {
				if u.NotFound {
					missing = append(missing, u.ID)
				}
				if *asJSON {
					continue // in the document
				}
				if _, err := fmt.Fprintln(a.stdout, u.line()); err != nil {
					return err
				}
			}
			// One statement, both kinds: the bar only shows that it is running.
			m := a.meter("redrive", "rows")
			m.set(0, "redriving")
			events, tasks, err := in.RedriveByKind(ctx, filter)
			m.done()
			if err != nil {
				return a.storeErr(err)
			}
			n, moved := events+tasks, display.Kinds(events, tasks)
			if kind != "" {
				moved = counted(n, kind) // "0 tasks" with -kind task
			}
			switch {
			case *asJSON:
				err = writeJSON(a.stdout, redriveJSON{Events: events, Tasks: tasks, DryRun: *dryRun, NotRedriven: unmoved})
			case *dryRun:
				_, err = fmt.Fprintf(a.stdout, "would redrive %s (dry run: none moved)\n", moved)
				if err == nil && tasks > 0 {
					_, err = fmt.Fprintln(a.stdout, tasksRedriveNote)
				}
			case n == 0:
				_, err = fmt.Fprintf(a.stdout, "redrove %s: none selected is %s\n", moved, joinNames(orDefault(sts)))
			default:
				_, err = fmt.Fprintf(a.stdout, "redrove %s: pending again, with a fresh attempt budget\n", moved)
			}
			if err == nil && !*asJSON && len(sts) == 0 && len(ids) == 0 {
				err = a.failedLeft(ctx, in, filter)
			}
			if err != nil || len(missing) == 0 {
				return err
			}
			return notFoundError("%d of %d ids not found: %s", len(missing), len(uniqueIDs(ids)), display.Line(missing[0]))
		}
	},
}

// failedLeft says how many failed events and tasks f selects besides the
// dead letters it takes by default, when there are any: a redrive by type
// or time after a failing handler was fixed, before its events were
// dead-lettered, moves none of them. A count that fails is said on
// stderr, and is not the redrive's failure.
func (a *app) failedLeft(ctx context.Context, in *idempotency.Inbox, f idempotency.RedriveFilter) error {
	f.States, f.DryRun = []idempotency.InboxState{idempotency.InboxFailed}, true
	events, tasks, err := in.RedriveByKind(ctx, f)
	if err != nil {
		_, err = fmt.Fprintf(a.stderr, "idemctl: redrive: the failed events and tasks of this selection could not be counted: %s\n", display.Line(a.storeErr(err).Error()))
		return err
	}
	if events+tasks == 0 {
		return nil
	}
	left := display.Kinds(events, tasks)
	if f.Kind != "" {
		left = counted(events+tasks, f.Kind)
	}
	_, err = fmt.Fprintf(a.stdout, "not redriven, failed: %s of this selection (-state failed takes failed ones, -state dead_letter,failed both)\n", left)
	return err
}

// tasksRedriveNote follows a dry run's count of tasks: a task's attempt
// does not roll back as an event's does.
const tasksRedriveNote = "before the redrive: a task's attempt that failed may have had its effect all the same " +
	"(the provider accepted the request, and its answer was lost or came after the timeout): look at the provider's log first " +
	"(show prints a task's idempotency key), or the redrive may send the email or make the call again"

// aKind names a row of each kind with its article.
var aKind = map[idempotency.InboxKind]string{idempotency.KindEvent: "an event", idempotency.KindTask: "a task"}

// redriveJSON is redrive -json's document.
type redriveJSON struct {
	Events      int           `json:"events"`
	Tasks       int           `json:"tasks"`
	DryRun      bool          `json:"dry_run"`
	NotRedriven []notRedriven `json:"not_redriven"`
}

// notRedriven is an -id that redrive does not move, and why.
type notRedriven struct {
	ID       string `json:"id"`
	Reason   string `json:"reason"`
	NotFound bool   `json:"not_found"`
}

// line is u as redrive prints it without -json.
func (u notRedriven) line() string {
	if u.NotFound {
		return display.Line(u.ID) + ": not found: " + u.Reason
	}
	return display.Line(u.ID) + ": not redriven: " + u.Reason
}

// notRedriven returns each of f's ids that f does not select, in the
// order given, and why: not in the inbox, or not of its states, kind,
// type, object, account or times.
func (a *app) notRedriven(ctx context.Context, in *idempotency.Inbox, f idempotency.RedriveFilter) ([]notRedriven, error) {
	unmoved := []notRedriven{}
	for _, id := range uniqueIDs(f.EventIDs) {
		rec, ok, err := in.Lookup(ctx, id)
		if err != nil {
			return nil, a.storeErr(err)
		}
		why := ""
		switch sts := orDefault(f.States); {
		case !ok:
			unmoved = append(unmoved, notRedriven{ID: id, Reason: "the inbox has no event or task with this id", NotFound: true})
			continue
		case f.Kind != "" && rec.Kind != f.Kind:
			why = fmt.Sprintf("%s, and -kind %s keeps %ss", aKind[rec.Kind], f.Kind, f.Kind)
		case !slices.Contains(sts, rec.State):
			why = fmt.Sprintf("it is %s, not %s", rec.State, joinNames(sts))
			if rec.State.Redrivable() {
				why += fmt.Sprintf(" (-state %s takes it)", rec.State)
			}
		case f.EventType != "" && rec.EventType != f.EventType:
			why = fmt.Sprintf("of type %s, not %s", display.Line(rec.EventType), display.Line(f.EventType))
		case f.ObjectID != "" && rec.ObjectID != f.ObjectID:
			why = "not of -object " + display.Line(f.ObjectID)
		case f.Account != "" && rec.Account != f.Account:
			why = "not of -account " + display.Line(f.Account)
		case !f.Since.IsZero() && rec.ReceivedAt.Before(f.Since):
			why = "received before -since"
		case !f.Until.IsZero() && !rec.ReceivedAt.Before(f.Until):
			why = "received at or after -until"
		default:
			continue
		}
		unmoved = append(unmoved, notRedriven{ID: id, Reason: why})
	}
	return unmoved, nil
}

// counted is n with the noun for what kind selects: "1 task", "2 tasks";
// "events" otherwise, as the rest of idemctl calls an inbox's rows.
func counted(n int, kind idempotency.InboxKind) string {
	if kind == idempotency.KindTask {
		return display.Count(n, "task", "tasks")
	}
	return display.Count(n, "event", "events")
}

// allRedrives names what redrive -all takes with kind and sts: "dead_letter
// event and task" without -kind, which moves both kinds.
func allRedrives(kind idempotency.InboxKind, sts []idempotency.InboxState) string {
	rows := "event and task"
	if kind != "" {
		rows = string(kind)
	}
	return joinNames(orDefault(sts)) + " " + rows
}

// orDefault is the states Redrive takes for sts: dead_letter when empty.
func orDefault(sts []idempotency.InboxState) []idempotency.InboxState {
	if len(sts) == 0 {
		return []idempotency.InboxState{idempotency.InboxDeadLetter}
	}
	return sts
}

var forgetCommand = command{
	name:    "forget",
	args:    "<event-id>...",
	summary: "delete an event's claim, guards and inbox row, so that it can be processed again",
	help: `Deletes what makes each event known (Forget): its claim in the ledger, the
natural-key guards its transaction claimed, and its row in the inbox, in one
transaction per event. The next delivery of the event (a resend from
Stripe's Dashboard, or idemctl recover) is then applied again as new: use it
after undoing an event's effects by hand. The tasks it enqueued stay done,
and CheckOrder's record of it stays.

An event still to be applied in the inbox (pending, processing, failed) is
refused: there is nothing to forget yet. A task's id is refused too: its
inbox row is what makes it run once per key. An id is read without the
white space around it, and one given twice is forgotten once.

The service's running replicas may still answer the event duplicate from
their memory of recent claims for up to PgxConfig.RecentClaimsTTL (1 minute
by default): wait that long before resending it.

It prints one line per id. Exits 3 when an id was not found (the others are
forgotten), 1 when one was refused or failed.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		return func(ctx context.Context, a *app, args []string) error {
			if len(args) == 0 {
				return usageError("want at least one event id")
			}
			// A bad id is a usage error, found before any id is forgotten.
			args = slices.Clone(args)
			for i, id := range args {
				args[i] = trimID(id)
				if err := checkEventID(args[i]); err != nil {
					return usageError("argument %d: %v", i+1, err)
				}
			}
			// An id given twice is forgotten once: the second time it would
			// be reported not found.
			args = uniqueIDs(args)
			_, in, closeFn, err := a.openInbox(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			var missing, refused []string
			for _, id := range args {
				found, err := in.Forget(ctx, id)
				switch {
				case errors.Is(err, idempotency.ErrForgetTask):
					refused = append(refused, id)
					fmt.Fprintf(a.stdout, "%s: refused: a task, not an event; nothing of it deleted\n", display.Line(id))
				case errors.Is(err, idempotency.ErrUnfinished):
					refused = append(refused, id)
					fmt.Fprintf(a.stdout, "%s: refused: still to be applied in the inbox (pending, processing or failed); nothing of it deleted\n", display.Line(id))
				case err != nil:
					return a.storeErr(err)
				case !found:
					missing = append(missing, id)
					fmt.Fprintf(a.stdout, "%s: not found: the store has no claim, guard or inbox row of it\n", display.Line(id))
				default:
					fmt.Fprintf(a.stdout, "%s: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n", display.Line(id))
				}
			}
			if len(refused) > 0 {
				return fmt.Errorf("%d of %d ids refused: %s", len(refused), len(args), refused[0])
			}
			if len(missing) > 0 {
				return notFoundError("%d of %d ids not found: %s", len(missing), len(args), missing[0])
			}
			return nil
		}
	},
}

// uniqueIDs is ids without the repeats, in the order given.
func uniqueIDs(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool {
		dup := seen[id]
		seen[id] = true
		return dup
	})
}

// checkEventID refuses an id that no store can hold, by the rule Forget
// applies: show and forget refuse it before connecting. It does not quote
// the id.
func checkEventID(id string) error {
	if p := keytext.KeyProblem(id); p != "" {
		return errors.New("the event id " + p)
	}
	return nil
}

var migrateCommand = command{
	name:    "migrate",
	args:    "",
	summary: "create or update the store's tables in -schema",
	help: `Creates the schema and the store's tables, applying the migrations this
idemctl's library version has that the database has not (PgxStore.Migrate).
It is idempotent and safe while the service runs and migrates too. Run it
as the role that owns the schema's tables: a migration alters them, which
only their owner may (a role that owns nothing passes only while nothing
is pending).`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			store, closeFn, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			if err := store.Migrate(ctx); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "schema %q is migrated\n", a.schema)
			return err
		}
	},
}
