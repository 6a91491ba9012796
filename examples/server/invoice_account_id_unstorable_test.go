package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInvoiceAccountIDUnstorableSkipped: a paid invoice whose
// metadata.account_id holds a NUL byte, which no account id can (as
// /accounts/{id} answers 404 for one), is skipped with a reason that says
// so, on both stores alike. PostgreSQL refused the grant on every attempt
// (500 in synchronous mode; in the inbox, retried for 6.5 days, holding
// back the later events of its invoice), where the memory store granted
// it.
func TestInvoiceAccountIDUnstorableSkipped(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			svc := newStore(t, kind)
			c, _, _ := serve(t, svc, false, idempotency.InboxConfig{})
			c.deliverAll(idempotency.OutcomeSkipped, invoiceEventFor(t, "invoice.paid", "evt_nul_1", "in_nul_1", "acct_\x00x"))
			require.Equal(t, "invoice's metadata.account_id holds a NUL byte or invalid UTF-8, which no account id can", skipReason(t, svc, "evt_nul_1"))
		})
	}
}
