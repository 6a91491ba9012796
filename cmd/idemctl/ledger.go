package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

// outcomes are the outcomes the ledger records, as ledger -outcome takes
// them.
var outcomes = []idempotency.Outcome{idempotency.OutcomeProcessed, idempotency.OutcomeSkipped, idempotency.OutcomeIgnored}

var ledgerCommand = command{
	name:    "ledger",
	args:    "[-outcome o] [-type t] [-object id] [-account acct] [-since t] [-until t] [-limit n] [-after id] [-json]",
	summary: "list the ledger's records of the events applied, skipped or ignored, newest first (no payloads)",
	help: `Lists the ledger's records that the flags select (ListEvents), newest
processed first, without payloads: an aligned table, or with -json one
JSON document. The table's ACCOUNT is an event's connected account, "-"
for the platform's own events. The ledger holds a record of each event a transaction
claimed, in synchronous mode (a Handler without an Inbox) and in inbox
mode (a worker's attempt) alike: processed (applied), skipped (its
handler returned Skip: SKIP REASON says why, cut at 60 characters; -json
has it whole) or ignored (no handler for its type: a synchronous Handler
records it only with Config.RecordIgnored; an inbox's ignored events are
in its list, not here). It is where a synchronous-mode service's record
of its events is: "which events of cus_123 did we apply in the last
hour, and which were skipped?" is ledger -object cus_123 -since 1h.

-since and -until bound the time the event was claimed (PROCESSED: as its
transaction began, on the database's clock), not when it was received.
A delivery that failed (answered 5xx) is not in the ledger: it stored
nothing, and Stripe sends it again. show <event-id> prints one event's
record, with its inbox record.

When no record matches, a line says why that may be: nothing the
selection names was claimed (a delivery that failed, or one answered
ignored without Config.RecordIgnored, stores nothing), or it was claimed
longer ago than the ledger keeps a record (Retention.EventIDs, 45 days by
default) and pruned since. "more" says that more records match than
-limit let through; the table says so on stderr, with the -after that
lists the next page (its id quoted for a shell when a shell would split
it or run part of it; left out, saying why, when no command line gives
the id as it is). -after id lists the records after that one (the last
of the page before) in this order, with the same flags: page by page,
every record once, also while new ones are claimed. An id the ledger
does not have exits 3. The JSON document:

  {"records":[{"id":..,"type":..,"object_id":..,"account":..,
    "livemode":..,"outcome":..,"skip_reason":..,"received_at":..,
    "processed_at":..}],"more":true|false}

` + timesHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		var outs listFlag
		var since, until timeFlag
		fs.Var(&outs, "outcome", "list records of these outcomes (repeatable, or a comma list): "+joinNames(outcomes))
		eventType := fs.String("type", "", "list records of this event type")
		object := fs.String("object", "", "list the records of this object (data.object.id), under every connected account unless -account")
		account := fs.String("account", "", "list the records of this connected account's events (the event's account)")
		fs.Var(&since, "since", "list records claimed at or after this time")
		fs.Var(&until, "until", "list records claimed before this time")
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
			var want []idempotency.Outcome
			for _, o := range outs {
				if !slices.Contains(outcomes, idempotency.Outcome(o)) {
					return usageError("-outcome %q: want one of %s", o, joinNames(outcomes))
				}
				want = append(want, idempotency.Outcome(o))
			}
			if err := checkTimes(since, until, a.now()); err != nil {
				return err
			}
			store, closeFn, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			from, to, err := timeRange(since, until, a.dbNow())
			if err != nil {
				return err
			}
			filter := idempotency.EventFilter{
				Outcomes: want, EventType: pasted(*eventType), ObjectID: pasted(*object),
				Account: pasted(*account), Since: from, Until: to,
			}
			recs, more, err := listPage(ctx, *after, *limit, store.LookupEvent, "the ledger has no record of this id",
				func(ctx context.Context, after idempotency.EventPosition, limit int) ([]idempotency.EventRecord, error) {
					page := filter
					page.After, page.Limit = after, limit
					return store.ListEvents(ctx, page)
				})
			if err != nil {
				return a.storeErr(err)
			}
			if *asJSON {
				doc := ledgerListJSON{Records: make([]ledgerRecordJSON, len(recs)), More: more}
				for i, r := range recs {
					doc.Records[i] = ledgerRecordJSON{ID: r.EventID, Type: r.EventType, ObjectID: r.ObjectID, Account: r.Account,
						Livemode: r.Livemode, Outcome: string(r.Outcome), SkipReason: r.SkipReason,
						ReceivedAt: optionalTime(r.ReceivedAt), ProcessedAt: optionalTime(r.ProcessedAt)}
				}
				return writeJSON(a.stdout, doc)
			}
			if len(recs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no ledger record matches: "+noLedgerRecord)
				return err
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "ID\tTYPE\tOBJECT\tACCOUNT\tOUTCOME\tRECEIVED\tPROCESSED\tSKIP REASON")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", display.Line(r.EventID), display.Line(r.EventType), dash(r.ObjectID), dash(r.Account),
					r.Outcome, formatTime(r.ReceivedAt), formatTime(r.ProcessedAt), dash(truncate(display.Line(r.SkipReason), 60)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if more {
				a.moreLine("ledger", *limit, recs[len(recs)-1].EventID)
			}
			return nil
		}
	},
}

// noLedgerRecord says why the ledger may have no record of what a
// selection names.
const noLedgerRecord = "no event it selects was claimed in this store (a delivery that failed, answered 5xx, stores nothing, " +
	"and one answered ignored only with Config.RecordIgnored), or it was claimed longer ago than the ledger keeps a record " +
	"(Retention.EventIDs, 45 days by default) and pruned since"

// ledgerListJSON is ledger -json's document.
type ledgerListJSON struct {
	Records []ledgerRecordJSON `json:"records"`
	More    bool               `json:"more"`
}

// ledgerRecordJSON is a ledger record in -json output: stable names, every
// field present, null for a time not set.
type ledgerRecordJSON struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	ObjectID    string     `json:"object_id"`
	Account     string     `json:"account"`
	Livemode    bool       `json:"livemode"`
	Outcome     string     `json:"outcome"`
	SkipReason  string     `json:"skip_reason"`
	ReceivedAt  *time.Time `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
}
