package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestLedgerListsASynchronousServicesEvents: ledger lists the ledger's
// records, newest claimed first, as a synchronous-mode service (a Handler
// without an Inbox) leaves them: by -object (trimmed), -outcome, -type,
// -since and -account, with the skip reason and no payload, -json with
// every field, a "more" line whose -after, the page's last id, lists the
// next page (an id the ledger does not have exits 3; -type and -after
// trimmed too), a line saying why when none matches, and a -limit out of
// its range refused. There was only show, one id at a time.
func TestLedgerListsASynchronousServicesEvents(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	idempotency.On(hs, "charge.refunded", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error {
		return idempotency.Skip("refunds are booked by hand")
	})
	sync, err := idempotency.NewHandler(s.store, hs, idempotency.Config{Secrets: []string{secret}, RecordIgnored: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	deliver := func(id, typ, object string, want idempotency.Outcome) {
		t.Helper()
		a := idempotencytest.Deliver(sync, eventPayload(t, id, typ, object, time.Now().Unix()), secret)
		require.Equal(t, want, a.Outcome, a.Body)
	}
	deliver("evt_l_1", "invoice.paid", "cus_123", idempotency.OutcomeProcessed)
	deliver("evt_l_2", "charge.refunded", "cus_123", idempotency.OutcomeSkipped)
	deliver("evt_l_3", "customer.created", "cus_123", idempotency.OutcomeIgnored)
	deliver("evt_l_4", "invoice.paid", "cus_other", idempotency.OutcomeProcessed)

	r := idemctl(t, s.db, nil, "ledger", "-object", " cus_123", "-since", "1h", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	doc := decode[ledgerListJSON](t, r)
	require.False(t, doc.More)
	require.Len(t, doc.Records, 3)
	var ids []string
	for _, rec := range doc.Records {
		ids = append(ids, rec.ID)
		require.Equal(t, "cus_123", rec.ObjectID)
		require.NotNil(t, rec.ProcessedAt)
		require.NotNil(t, rec.ReceivedAt)
	}
	require.Equal(t, []string{"evt_l_3", "evt_l_2", "evt_l_1"}, ids, "newest claimed first")
	require.Equal(t, ledgerRecordJSON{ID: "evt_l_2", Type: "charge.refunded", ObjectID: "cus_123", Outcome: "skipped",
		SkipReason: "refunds are booked by hand", ReceivedAt: doc.Records[1].ReceivedAt, ProcessedAt: doc.Records[1].ProcessedAt}, doc.Records[1])
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NotContains(t, string(raw), customerEmail)

	r = idemctl(t, s.db, nil, "ledger", "-object", "cus_123", "-outcome", "skipped,processed")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^ID\s+TYPE\s+OBJECT\s+ACCOUNT\s+OUTCOME\s+RECEIVED\s+PROCESSED\s+SKIP REASON\n`, r.stdout)
	require.Regexp(t, `(?m)^evt_l_2\s+charge\.refunded\s+cus_123\s+-\s+skipped\s+\S+\s+\S+\s+refunds are booked by hand$`, r.stdout)
	require.Regexp(t, `(?m)^evt_l_1\s+invoice\.paid\s+cus_123\s+-\s+processed\s+\S+\s+\S+\s+-$`, r.stdout)
	require.Len(t, lines(r.stdout), 3)
	require.NotContains(t, r.stdout, customerEmail)

	// -limit 1 of the two processed: the "more" line's -after lists the
	// older one; -type and -after are read without the spaces around them.
	r = idemctl(t, s.db, nil, "ledger", "-type", " invoice.paid", "-limit", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^evt_l_4\s`, r.stdout)
	m := regexp.MustCompile(`^idemctl: ledger: more than 1 record matches; next: -after (\S+), `).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	require.Equal(t, "evt_l_4", m[1])
	r = idemctl(t, s.db, nil, "ledger", "-type", "invoice.paid", "-limit", "1", "-after", " "+m[1])
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^evt_l_1\s`, r.stdout)
	require.Empty(t, r.stderr, "no more")
	// The "more" line names the last record of the page, not the first.
	r = idemctl(t, s.db, nil, "ledger", "-limit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "more than 2 records match; next: -after evt_l_3, ")
	r = idemctl(t, s.db, nil, "ledger", "-after", "evt_nope")
	require.Equal(t, exitNotFound, r.code, r.stdout)
	require.Equal(t, "idemctl: ledger: -after evt_nope: the ledger has no record of this id\n", r.stderr)

	// -account: the connected account's events alone.
	conn := idempotencytest.Deliver(sync, accountEventPayload(t, "evt_l_5", "invoice.paid", "cus_123", "acct_1Conn", time.Now().Unix()), secret)
	require.Equal(t, idempotency.OutcomeProcessed, conn.Outcome, conn.Body)
	r = idemctl(t, s.db, nil, "ledger", "-object", "cus_123", "-account", "acct_1Conn ", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	doc = decode[ledgerListJSON](t, r)
	require.Len(t, doc.Records, 1)
	require.Equal(t, "evt_l_5", doc.Records[0].ID)
	require.Equal(t, "acct_1Conn", doc.Records[0].Account)

	// -json's livemode is the record's.
	var live map[string]any
	require.NoError(t, json.Unmarshal(eventPayload(t, "evt_l_6", "invoice.paid", "cus_live", time.Now().Unix()), &live))
	live["livemode"] = true
	raw, err = json.Marshal(live)
	require.NoError(t, err)
	a := idempotencytest.Deliver(sync, raw, secret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	r = idemctl(t, s.db, nil, "ledger", "-object", "cus_live", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	doc = decode[ledgerListJSON](t, r)
	require.Len(t, doc.Records, 1)
	require.True(t, doc.Records[0].Livemode)

	r = idemctl(t, s.db, nil, "ledger", "-object", "cus_none")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "no ledger record matches: "+noLedgerRecord+"\n", r.stdout)
	require.Contains(t, r.stdout, "Retention.EventIDs")
	r = idemctl(t, s.db, nil, "ledger", "-object", "cus_none", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, decode[ledgerListJSON](t, r).Records)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-outcome", "failed"}, `idemctl: ledger: -outcome "failed": want one of processed, skipped, ignored`},
		{[]string{"-limit", "0"}, "idemctl: ledger: -limit 0: want 1 to 10000"},
		{[]string{"-limit", "10001"}, "idemctl: ledger: -limit 10001: want 1 to 10000"},
		{[]string{"-since", "1h", "-until", "2h"}, "idemctl: ledger: -since"},
	} {
		r = idemctl(t, nil, nil, append([]string{"ledger"}, c.args...)...)
		require.Equal(t, exitUsage, r.code, c.args)
		require.Contains(t, r.stderr, c.want)
	}
}
