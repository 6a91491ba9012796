package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInvoicePeriodEndZeroKeepsPlanUntil: a paid invoice whose first
// line's period.end is 0 (none given) grants its credits and leaves
// plan_until as it was: null on a new account, the date an earlier
// invoice set on one that has it, on both stores. It set plan_until to
// 1970-01-01T00:00:00Z on a new account, the Unix epoch taken for a date.
func TestInvoicePeriodEndZeroKeepsPlanUntil(t *testing.T) {
	t.Parallel()
	const oct01 = 1759334400 // 2025-10-01T16:00:00Z
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			svc := newStore(t, kind)
			c, _, _ := serve(t, svc, false, idempotency.InboxConfig{})
			c.deliverAll(idempotency.OutcomeProcessed, invoiceEndingAtZero(t, "evt_zero_1", "in_zero_1", "acct_zero"))
			status, body := c.get("/accounts/acct_zero")
			require.Equal(t, http.StatusOK, status, body)
			require.JSONEq(t, `{"id":"acct_zero","credits":100,"receipts":1,"plan_until":null}`, body)

			c.deliverAll(idempotency.OutcomeProcessed,
				invoiceEndingAt(t, "evt_zero_2", "in_zero_2", "acct_zero", oct01),
				invoiceEndingAtZero(t, "evt_zero_3", "in_zero_3", "acct_zero"),
			)
			status, body = c.get("/accounts/acct_zero")
			require.Equal(t, http.StatusOK, status, body)
			require.JSONEq(t, `{"id":"acct_zero","credits":300,"receipts":3,"plan_until":"2025-10-01T16:00:00Z"}`, body)
		})
	}
}

// invoiceEndingAtZero is a paid invoice event whose first line's
// period.end is 0 (invoiceEndingAt's 0 gives it no lines).
func invoiceEndingAtZero(t *testing.T, id, invoice, account string) []byte {
	t.Helper()
	return idempotencytest.Derive(invoiceEventFor(t, "invoice.paid", id, invoice, account),
		map[string]any{"data.object.lines.data.0.period.end": 0})
}
