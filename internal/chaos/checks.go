package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
)

// check is one check of a run: its line says the value and what it must be.
type check struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Value int64  `json:"value"`
	Must  int64  `json:"must"`
	Line  string `json:"line"`
}

// newCheck makes the check name whose value must equal must; what says
// what the value is, and why what it must be.
func newCheck(name string, value, must int64, what, why string) check {
	return checkThat(name, value == must, value, must, what, why)
}

// checkThat is newCheck for a check that holds when ok does: one whose
// value is one of several that what names.
func checkThat(name string, ok bool, value, must int64, what, why string) check {
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	return check{Name: name, OK: ok, Value: value, Must: must,
		Line: fmt.Sprintf("%s %s %s: %d, must be %d (%s)", name, verdict, what, value, must, why)}
}

// outcome is what a run sent and what was answered, for the checks.
type outcome struct {
	tag        string              // in every id of the run
	deliveries int64               // sent, each retried until answered 2xx
	answered   int64               // answered 2xx in the end
	acked      map[string]*invoice // event id answered 2xx → its invoice
	mail       *mailbox
}

// checkRun checks, on the database the servers ran on (pool, with their
// search_path), that the run lost and doubled nothing.
func checkRun(ctx context.Context, pool *pgxpool.Pool, o outcome) ([]check, error) {
	ids := make([]string, 0, len(o.acked))
	invoices := map[string]bool{}
	for id, inv := range o.acked {
		ids = append(ids, id)
		invoices[inv.id] = true
	}
	nIDs, nInvs := int64(len(ids)), int64(len(invoices))
	evPrefix, taskPrefix := eventPrefix+o.tag, "task:send-receipt:"+invoicePrefix+o.tag
	var (
		processed, ledgerRows, inboxEvents, credits, receipts, tasksDone, dead, unfinished int64
	)
	err := retryConn(ctx, func(ctx context.Context) error {
		return pool.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM idempotency_events WHERE event_id = ANY($1) AND outcome = 'processed'),
  (SELECT count(*) FROM idempotency_events WHERE starts_with(event_id, $2)),
  (SELECT count(*) FROM idempotency_inbox WHERE kind = 'event' AND starts_with(event_id, $2)),
  (SELECT coalesce(sum(credits), 0) FROM accounts WHERE starts_with(id, $4)),
  (SELECT coalesce(sum(receipts), 0) FROM accounts WHERE starts_with(id, $4)),
  (SELECT count(*) FROM idempotency_inbox WHERE kind = 'task' AND starts_with(event_id, $3) AND state = 'processed'),
  (SELECT count(*) FROM idempotency_inbox WHERE (starts_with(event_id, $2) OR starts_with(event_id, $3)) AND state = 'dead_letter'),
  (SELECT count(*) FROM idempotency_inbox WHERE (starts_with(event_id, $2) OR starts_with(event_id, $3)) AND state IN ('pending', 'processing', 'failed'))`,
			ids, evPrefix, taskPrefix, accountPrefix+o.tag+"_").
			Scan(&processed, &ledgerRows, &inboxEvents, &credits, &receipts, &tasksDone, &dead, &unfinished)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the database for the checks: %w", err)
	}
	keys, repeats := o.mail.perInvoice()
	var oneKey, otherKeys int64 // invoices of the run with one key; with none or several, or not the run's
	for inv := range invoices {
		if keys[inv] == 1 {
			oneKey++
		}
	}
	for inv, n := range keys {
		if !invoices[inv] || n != 1 {
			otherKeys++
		}
	}
	for inv := range invoices {
		if keys[inv] == 0 {
			otherKeys++
		}
	}
	o.mail.mu.Lock()
	posts, refused := o.mail.posts, o.mail.refused
	o.mail.mu.Unlock()
	return []check{
		newCheck("C1", processed, nIDs, "event ids answered 2xx that the ledger has processed", "every one answered 2xx"),
		checkThat("C2", ledgerRows == nIDs && inboxEvents == nIDs, ledgerRows, nIDs,
			fmt.Sprintf("ledger rows of the run (inbox events %d)", inboxEvents), "both: the distinct event ids answered 2xx, none twice"),
		newCheck("C3", credits, 100*nInvs, "credits", fmt.Sprintf("100 × %d distinct invoices", nInvs)),
		checkThat("C4", receipts == nInvs && tasksDone == nInvs, receipts, nInvs,
			fmt.Sprintf("receipts of the accounts (send-receipt tasks finished %d)", tasksDone), "both: one per distinct invoice"),
		checkThat("C5", oneKey == nInvs && otherKeys == 0, oneKey, nInvs,
			fmt.Sprintf("invoices whose receipt the email provider saw under one Idempotency-Key (%d with none, several or not the run's; %d POSTs, %d repeating a key, %d refused)", otherKeys, posts, repeats, refused),
			"every distinct invoice"),
		newCheck("C6", dead, 0, "dead letters", "none"),
		newCheck("C7", o.answered, o.deliveries, "deliveries answered 2xx in the end", "every delivery"),
		newCheck("C8", unfinished, 0, "events and tasks left pending, processing or failed", "none"),
	}, nil
}

// result is a run's summary, as -json writes it.
type result struct {
	OK                 bool           `json:"ok"`
	Deliveries         int64          `json:"deliveries"`
	Answered2xx        int64          `json:"answered_2xx"`
	Attempts           int64          `json:"attempts"`
	Non2xx             int64          `json:"answers_not_2xx"`
	TransportErrors    int64          `json:"transport_errors"`
	Events             int            `json:"events"`
	Invoices           int            `json:"invoices"`
	Duplicates         int            `json:"duplicates"`
	Twins              int            `json:"twins"`
	Faults             map[string]int `json:"faults"`
	BackendsTerminated int            `json:"backends_terminated"`
	SendSeconds        float64        `json:"send_seconds"`
	DrainSeconds       float64        `json:"drain_seconds"`
	Checks             []check        `json:"checks"`

	outcome outcome // what the checks read, beside the database
}

func (r *result) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
