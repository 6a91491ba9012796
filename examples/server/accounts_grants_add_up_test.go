package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// invoiceEndingAt is a paid invoice of account whose first line's period
// ends at end (Unix seconds), or that has no lines when end is 0.
func invoiceEndingAt(t *testing.T, id, invoice, account string, end int64) []byte {
	t.Helper()
	field := map[string]any{"data.object.lines.data.0.period.end": end}
	if end == 0 {
		field = map[string]any{"data.object.lines.data": []any{}}
	}
	return idempotencytest.Derive(invoiceEventFor(t, "invoice.paid", id, invoice, account), field)
}

// TestAccountGrantsAddUp: each paid invoice of an account adds 100
// credits and a receipt to what it has, and plan_until only moves later;
// an invoice without lines leaves it null. On both stores (the memory
// table, and PostgreSQL's UPDATE and its upsert).
func TestAccountGrantsAddUp(t *testing.T) {
	t.Parallel()
	const (
		oct01 = 1759334400 // 2025-10-01T16:00:00Z
		sep01 = oct01 - 30*86400
		oct31 = oct01 + 30*86400
	)
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c, _, _ := serve(t, newStore(t, kind), false, idempotency.InboxConfig{})
			c.deliverAll(idempotency.OutcomeProcessed,
				invoiceEndingAt(t, "evt_add_1", "in_add_1", "acct_add", oct01),
				invoiceEndingAt(t, "evt_add_2", "in_add_2", "acct_add", sep01), // an earlier period: plan_until stays
			)
			status, body := c.get("/accounts/acct_add")
			require.Equal(t, http.StatusOK, status, body)
			require.JSONEq(t, `{"id":"acct_add","credits":200,"receipts":2,"plan_until":"2025-10-01T16:00:00Z"}`, body)

			c.deliverAll(idempotency.OutcomeProcessed, invoiceEndingAt(t, "evt_add_3", "in_add_3", "acct_add", oct31))
			_, body = c.get("/accounts/acct_add")
			require.JSONEq(t, `{"id":"acct_add","credits":300,"receipts":3,"plan_until":"2025-10-31T16:00:00Z"}`, body)

			c.deliverAll(idempotency.OutcomeProcessed, invoiceEndingAt(t, "evt_add_4", "in_add_4", "acct_nolines", 0))
			_, body = c.get("/accounts/acct_nolines")
			require.JSONEq(t, `{"id":"acct_nolines","credits":100,"receipts":1,"plan_until":null}`, body)
		})
	}
}
