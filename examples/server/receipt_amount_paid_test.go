package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestReceiptNamesTheAmountPaid: the receipt says what was paid
// (amount_paid), in the invoice's currency, where the fixtures' invoices
// were paid in full and could not tell it from amount_due.
func TestReceiptNamesTheAmountPaid(t *testing.T) {
	t.Parallel()
	c, inbox, mailer := serve(t, newStore(t, "memory"), false, idempotency.InboxConfig{})
	c.deliverAll(idempotency.OutcomeProcessed, idempotencytest.Derive(invoiceEventFor(t, "invoice.paid", "evt_part", "in_part", "acct_part"),
		map[string]any{"data.object.amount_due": 2000, "data.object.amount_paid": 1500, "data.object.currency": "eur"}))
	n, err := inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	emails, _ := mailer.Sent()
	require.Equal(t, []Email{{To: "acct_part", Subject: "Receipt for invoice in_part", Body: "Paid: 1500 eur."}}, emails)
}
