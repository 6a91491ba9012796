package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

var recoverCommand = command{
	name:    "recover",
	args:    "-since t -types t1,t2 [-mode live|test] [-account acct] [-checkpoint name] [-only-undelivered] [-api-base url] [-json]",
	summary: "store the events the Events API lists since a time in the inbox, for the service's workers",
	help: `Lists the events Stripe created since -since from the Events API (GET
/v1/events, Handler.Recover on an Inbox's Handler) and stores each in the
inbox as pending, as a delivery would: the service's workers apply them with
its handlers. Events already in the inbox or claimed come out duplicates, so
a period that was partly delivered, or recovered before, costs nothing twice.
-since reaches back at most 30 days (the Events API's window).
A synchronous-mode service runs no workers: the events stored stay pending
and are never applied there (a delivery or a Recover claims them, and
applies them, all the same). Run Handler.Recover in the service instead.
When no worker ever attempted an event or a task the inbox holds, as
there, a run that stored events says so on stderr ("idemctl: recover: no
worker ever attempted an event or a task this inbox holds: if the service
runs in synchronous mode ..."), and exits 0 all the same.

idemctl does not know the service's handlers, and the inbox stores only the
events of types that have one (the others are answered ignored and not
stored): -types names the types to recover, the service's handled types,
exact (no wildcard such as invoice.*), and idemctl registers a stand-in for
each so that the inbox stores them pending.
It never applies an event itself. An event of a listed type the service's
workers have no handler for is not applied: their attempts fail with
ErrNoHandler and retry it with backoff, failed and holding back the later
events of its object, until InboxConfig.RetryUnhandledFor (an hour) after
it was stored, and then record it ignored.
The Events API lists no event for a misspelt type (invoice.payed), and says
nothing: after a run, each of -types no event was listed for is named on
stderr ("idemctl: recover: no event listed for invoice.payed since T: check
its spelling") and in -json's unlisted_types. A type with no event in the
time listed is named too, and the exit code stays 0 for it: a rare type in
a short window is no failure. An event counts once whatever came of it, a
duplicate too. A run that continued a checkpoint listed from 10 minutes
before its last event, not from -since, and says so; a run that stopped
names the types it listed none for until then.

The API key is read from the environment variable STRIPE_SECRET_KEY alone (a
secret key, or a restricted key with read access to events), and is never
printed. Use a key of the endpoint's mode: the Events API lists the events
of the key's mode, and the workers apply them (a test key's events on a live
endpoint too). -mode live or -mode test names the endpoint's mode and has it
checked: a key whose prefix names the other mode (sk_test_ or rk_test_ for
live, sk_live_ or rk_live_ for test) is a usage error before the database is
opened, and a listed event of the other mode stops the run before any event
of its page is stored (ErrModeMismatch). It lists the account's own events,
or with -account acct_... those of that connected account (Connect), every
request made as it (Stripe-Account): a Connect endpoint is sent only
connected accounts' events, so recover each account in turn there; without
-account it would be given the platform's own events. A listed event of
another account than the one asked for stops the run before any event of its
page is stored.
-api-base points the client at a local stripe-mock or a fake: a scheme and a
host (and port), with no path but /v1; a key other than a test key
(sk_test_, rk_test_) is sent over plain http only to this machine
(localhost, a loopback address). Stripe's API never redirects: the client
follows a redirect only on the same host, to where -api-base could point,
and to a location holding no key (an error would quote it), and
fails the request on any other without asking its location.

-checkpoint keeps, under a name, how far the run got: a run stopped by an
error, a failed event or SIGINT continues there when run again with the same
name and options. A checkpoint keeps its -account: name one per account.
It does not keep which Stripe account's key listed it: name one per Stripe
account too (a key of another is refused, exit 2, once its listing passes
the checkpoint's last event without it, the events of the 10 minutes
before stored already; not with -only-undelivered, nor for a last event
within a day of the 30 days' end).
Progress shows the pages listed. It exits 1 when events failed to be stored
(their ids are printed), 2 when -since is in the future or beyond the Events
API's window, -mode is not live or test or the key is of the other mode,
-account is not a connected account's id, or -checkpoint was started with
other options (each that differs is named, with the checkpoint's value and
the one given).

Besides its own "idemctl: " lines, recover writes to stderr the library's
log records at Warn and Error, one slog text line each (time=... level=...
msg=...): each page the Events API refused for now (429, 5xx, Stripe's or a
proxy's, the network) and that is asked for again, each event that failed
to be stored and why, an event of another API version than this idemctl's
stripe-go, and the run's end when it stopped.

With -json the report is one JSON document: {"listed":N,"queued":N,
"duplicate":N,"ignored":N,"failed":N,"failed_ids":[..],"requests":N,
"resumed":bool,"last_event_id":..,"interrupted":bool,"unlisted_types":[..]}.

` + sinceHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		var since timeFlag
		var types listFlag
		fs.Var(&since, "since", "recover the events created at or after this time (required; at most 30 days back)")
		fs.Var(&types, "types", "the event types to recover, the service's handled types (required; a comma list, at most 20)")
		mode := fs.String("mode", "", "the endpoint's mode, live or test: a key or a listed event of the other mode is refused (nothing checked without it)")
		account := fs.String("account", "", "recover the events of this connected account (acct_..., sent as Stripe-Account); the account's own without it")
		checkpoint := fs.String("checkpoint", "", "keep a checkpoint under this name, to continue a stopped run (one per -account)")
		onlyUndelivered := fs.Bool("only-undelivered", false, "list only the events Stripe reports as not delivered (quicker, not enough after an outage)")
		apiBase := fs.String("api-base", stripe.APIURL, "the Stripe API's base URL (a local stripe-mock or fake for tests)")
		asJSON := fs.Bool("json", false, "the report as one JSON document")
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if !since.set() {
				return usageError("-since is required")
			}
			// A duration is judged before the database is opened: no
			// clock changes how far back it reaches. A time waits for the
			// database's clock, which Recover measures the window on.
			if since.rel {
				local := a.now()
				if err := checkRecoverSince(since.at(local), local, *checkpoint); err != nil {
					return err
				}
			}
			if len(types) == 0 {
				return usageError("-types is required: the service's handled event types, a comma list")
			}
			slices.Sort(types)
			types = slices.Compact(types)
			for _, t := range types {
				if strings.Contains(t, "*") {
					return usageError("-types %q is a wildcard: list the exact event types the service handles", t)
				}
			}
			if len(types) > maxRecoverTypes {
				return usageError("-types lists %d types; the Events API takes at most %d", len(types), maxRecoverTypes)
			}
			switch idempotency.Mode(*mode) {
			case "", idempotency.ModeLive, idempotency.ModeTest:
			default:
				return usageError("-mode %q is not live or test", *mode)
			}
			*account = pasted(*account)
			if *account != "" {
				if err := stripeapi.CheckAccount(*account); err != nil {
					return usageError("-account %s", err)
				}
			}
			key := a.getenv("STRIPE_SECRET_KEY")
			if key == "" {
				return usageError("STRIPE_SECRET_KEY is not set: recovery lists events from the Stripe API with it")
			}
			if km := stripeapi.KeyMode(key); *mode != "" && km != "" && km != *mode {
				return usageError("-mode %s, and STRIPE_SECRET_KEY is a %s-mode key, which lists %s-mode events: use a key of the endpoint's mode", *mode, km, km)
			}
			client, err := stripeapi.NewClient(key, *apiBase, nil)
			if be, ok := errors.AsType[*stripeapi.BaseURLError](err); ok {
				return usageError("-api-base %v", be)
			}
			if err != nil {
				return usageError("%v", err)
			}
			store, closeFn, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			// The window (and the checkpoint's date) from the reading a
			// -since duration is measured from, the database's clock: a
			// later one refuses -since 30d.
			now := a.dbNow()
			if err := checkRecoverSince(since.at(now), now, *checkpoint); err != nil {
				return err
			}

			hs := idempotency.NewHandlers()
			for _, t := range types {
				if err := idempotency.OnSafely(hs, t, standIn); err != nil {
					return usageError("-types: %v", err)
				}
			}
			logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: logger, Now: a.dbNow})
			if err != nil {
				return err
			}
			// Recover hands the listed events to the handler directly; no
			// signature is checked, but a Handler needs a secret.
			h, err := in.Handler(idempotency.Config{Secrets: []string{"whsec_idemctl_recover_checks_no_signature"}, Logger: logger, Mode: idempotency.Mode(*mode)})
			if err != nil {
				return err
			}
			// No attempt at any row the inbox holds: no worker ever ran on
			// it, as on a synchronous-mode service's database, where what
			// recover stores is never applied. Read before the run, and
			// again after it when it stored events: an empty inbox (a new
			// service's, or one pruned empty after a long outage) has no
			// attempt before, and workers that apply what the run stores
			// meanwhile have one after.
			neverWorked := func() bool {
				st, err := in.Stats(ctx)
				return err == nil && st.LastAttempt.IsZero()
			}
			never := neverWorked()
			m := a.meter("recover", "events")
			pages := 0
			listed := map[string]int{} // the events listed, by type
			rep, err := h.Recover(ctx, client, idempotency.RecoverOptions{
				Since: since.at(now), Types: types, Account: *account, Checkpoint: *checkpoint, OnlyUndelivered: *onlyUndelivered,
				Now: func() time.Time { return now },
				OnPage: func(rep idempotency.RecoverReport) {
					pages++
					m.set(rep.Listed, fmt.Sprintf("%s, %s received", display.Count(pages, "page", "pages"), display.Count(rep.Listed, "event", "events")))
				},
				OnEvent: func(res idempotency.Result) { listed[res.EventType]++ },
			})
			m.done()
			if never && rep.Queued > 0 {
				never = neverWorked()
			}
			return a.recoverEnded(ctx, recoverRun{since: since.at(now), types: types, account: *account, checkpoint: *checkpoint,
				asJSON: *asJSON, neverWorked: never, listed: listed}, rep, err)
		}
	},
}

// checkRecoverSince refuses a -since in the future of now, and one before
// the Events API's window when no checkpoint could continue from within
// it (Recover refuses it too, and decides when one could), with the
// minute of leeway Recover allows.
func checkRecoverSince(since, now time.Time, checkpoint string) error {
	if since.After(now) {
		return usageError("-since %s is in the future", formatTime(since))
	}
	if oldest := now.Add(-idempotency.RecoveryWindow); checkpoint == "" && since.Before(oldest.Add(-time.Minute)) {
		return usageError("%v: -since %s is before %s", idempotency.ErrRecoveryWindow, formatTime(since), formatTime(oldest))
	}
	return nil
}

// recoverRun is what recover asked for and saw, which its report needs.
type recoverRun struct {
	since               time.Time
	types               []string
	account, checkpoint string
	asJSON, neverWorked bool
	listed              map[string]int // the events listed, by type
}

// recoverEnded reports the recovery that returned rep and err: interrupted
// only when the signal stopped it (it returned the context's error), not
// when the signal landed after it had listed and stored every event.
func (a *app) recoverEnded(ctx context.Context, run recoverRun, rep idempotency.RecoverReport, err error) error {
	if me, ok := errors.AsType[*idempotency.CheckpointMismatchError](err); ok {
		if text := checkpointMismatchText(me, run.since, run.types, run.account); text != "" {
			return usageError("%s", text)
		}
	}
	if errors.Is(err, idempotency.ErrRecoveryWindow) || errors.Is(err, idempotency.ErrCheckpointMismatch) {
		return usageError("%v", err)
	}
	var unlisted []string // the -types no event was listed for
	if rep.Requests > 0 {
		unlisted = slices.DeleteFunc(slices.Clone(run.types), func(t string) bool { return run.listed[t] > 0 })
	}
	stopped := err != nil
	if werr := a.writeRecover(rep, unlisted, interrupted(ctx, err), run.checkpoint != "", run.asJSON); werr != nil && err == nil {
		err = werr
	}
	if len(unlisted) > 0 {
		fmt.Fprintln(a.stderr, "idemctl: recover: "+unlistedText(unlisted, run.since, rep.Resumed, run.checkpoint, stopped))
	}
	if run.neverWorked && rep.Queued > 0 {
		fmt.Fprintln(a.stderr, "idemctl: recover: "+neverWorkedText(rep.Queued))
	}
	switch {
	case err != nil:
		return a.storeErr(err)
	case rep.Failed > 0:
		return fmt.Errorf("%s to be stored, first %s; run again (with -checkpoint, it continues before them)", display.Count(rep.Failed, "event failed", "events failed"), rep.FailedIDs[0])
	}
	return nil
}

// neverWorkedText says that the queued events recover stored are in an
// inbox no worker ever attempted a row of: in synchronous mode they stay
// pending, never applied, and Handler.Recover in the service applies them.
func neverWorkedText(queued int) string {
	stays, it := "stay", "them"
	if queued == 1 {
		stays, it = "stays", "it"
	}
	return fmt.Sprintf("no worker ever attempted an event or a task this inbox holds: "+
		"if the service runs in synchronous mode (a Handler without an Inbox), the %s stored %s pending, never applied; "+
		"run Handler.Recover in the service instead, which applies %s", display.Count(queued, "event", "events"), stays, it)
}

// maxRecoverTypes is the most types the Events API lists at once, as
// RecoverOptions.Types takes them.
const maxRecoverTypes = 20

// standIn is the handler registered for each -types type, so that the
// inbox stores those events pending rather than ignored. idemctl never runs
// the inbox's workers, so it is never called; if it were, it fails the
// attempt rather than mark the event applied.
func standIn(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
	return errors.New("idemctl applies no events: the service's workers do")
}

// checkpointMismatchText is Recover's refusal to continue checkpoint me
// with these options, in recover's flags (the library's names
// RecoverOptions' fields): each that differs, and what to do; "" for a
// refusal that names none.
func checkpointMismatchText(me *idempotency.CheckpointMismatchError, since time.Time, types []string, account string) string {
	var values []string
	for _, field := range me.Differing {
		switch field {
		case "Since":
			values = append(values, fmt.Sprintf("with -since %s, not the earlier %s", formatTime(me.Since), formatTime(since)))
		case "Types":
			values = append(values, fmt.Sprintf("with %s, not %s", typesFlag(me.Types), typesFlag(types)))
		case "OnlyUndelivered":
			value := "without -only-undelivered, not with it"
			if me.OnlyUndelivered {
				value = "with -only-undelivered, not without it"
			}
			values = append(values, value)
		case "Account":
			values = append(values, fmt.Sprintf("with %s, not %s", accountFlag(me.Account), accountFlag(account)))
		}
	}
	if values == nil {
		return ""
	}
	how := "those"
	switch sinceToo := fmt.Sprintf("a -since at or after %s", formatTime(me.Since)); {
	case len(me.Differing) == 1 && me.Differing[0] == "Since":
		how = sinceToo
	case slices.Contains(me.Differing, "Since"):
		how += " (" + sinceToo + ")"
	}
	how += ", or name another -checkpoint for these"
	if slices.Contains(me.Differing, "Account") {
		how += " (one per account)"
	}
	return fmt.Sprintf("%v: -checkpoint %q was started %s: run it with %s",
		idempotency.ErrCheckpointMismatch, display.Line(me.Checkpoint), strings.Join(values, "; "), how)
}

// accountFlag names the account -account lists the events of.
func accountFlag(account string) string {
	if account == "" {
		return "the key's own account (without -account)"
	}
	return "-account " + display.Line(account)
}

// typesFlag writes -types as given.
func typesFlag(types []string) string {
	if len(types) == 0 {
		return "every type" // a checkpoint of Handler.Recover without Types
	}
	return "-types " + display.Line(strings.Join(types, ","))
}

// unlistedText says that no event was listed for the types: misspelt,
// which the Events API answers with no events, or with none in the time
// listed. A run that continued a checkpoint listed from shortly before
// where it stood, not from since.
func unlistedText(types []string, since time.Time, resumed bool, checkpoint string, stopped bool) string {
	when := "since " + formatTime(since)
	if resumed {
		when = fmt.Sprintf("in this run, which continued checkpoint %q from %d minutes before its last event", display.Line(checkpoint), int(idempotency.RecoveryOverlap.Minutes()))
	}
	if stopped {
		when += " until it stopped"
	}
	its := "its"
	if len(types) > 1 {
		its = "their"
	}
	return fmt.Sprintf("no event listed for %s %s: check %s spelling (the Events API lists no event for a misspelt type, and says nothing)",
		display.Line(strings.Join(types, ", ")), when, its)
}

// recoverJSON is recover -json's document.
type recoverJSON struct {
	Listed      int      `json:"listed"`
	Queued      int      `json:"queued"`
	Duplicate   int      `json:"duplicate"`
	Ignored     int      `json:"ignored"`
	Failed      int      `json:"failed"`
	FailedIDs   []string `json:"failed_ids"`
	Requests    int      `json:"requests"`
	Resumed     bool     `json:"resumed"`
	LastEventID string   `json:"last_event_id"`
	Interrupted bool     `json:"interrupted"`
	// UnlistedTypes are the -types no event was listed for in this run.
	UnlistedTypes []string `json:"unlisted_types"`
}

func (a *app) writeRecover(rep idempotency.RecoverReport, unlisted []string, interrupted, checkpointed, asJSON bool) error {
	if asJSON {
		ids := rep.FailedIDs
		if ids == nil {
			ids = []string{}
		}
		if unlisted == nil {
			unlisted = []string{}
		}
		return writeJSON(a.stdout, recoverJSON{Listed: rep.Listed, Queued: rep.Queued, Duplicate: rep.Duplicate,
			Ignored: rep.Ignored, Failed: rep.Failed, FailedIDs: ids, Requests: rep.Requests, Resumed: rep.Resumed,
			LastEventID: rep.LastEventID, Interrupted: interrupted, UnlistedTypes: unlisted})
	}
	switch {
	case interrupted && checkpointed:
		fmt.Fprintln(a.stdout, "interrupted: the event in hand was finished and the checkpoint saved")
	case interrupted:
		fmt.Fprintln(a.stdout, "interrupted: the event in hand was finished; no checkpoint kept (-checkpoint keeps one)")
	}
	tw := newTable(a.stdout)
	fmt.Fprintf(tw, "listed\t%d\n", rep.Listed)
	fmt.Fprintf(tw, "queued\t%d\tstored pending, for the service's workers\n", rep.Queued)
	fmt.Fprintf(tw, "duplicate\t%d\talready in the inbox or claimed\n", rep.Duplicate)
	fmt.Fprintf(tw, "ignored\t%d\n", rep.Ignored)
	fmt.Fprintf(tw, "failed\t%d\t%s\n", rep.Failed, display.Line(strings.Join(rep.FailedIDs, ",")))
	fmt.Fprintf(tw, "requests\t%d\n", rep.Requests)
	fmt.Fprintf(tw, "resumed\t%t\n", rep.Resumed)
	if checkpointed {
		fmt.Fprintf(tw, "checkpoint at\t%s\n", dash(rep.LastEventID))
	} else {
		fmt.Fprintf(tw, "last event\t%s\n", dash(rep.LastEventID))
	}
	return tw.Flush()
}
