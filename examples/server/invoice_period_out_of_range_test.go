package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInvoicePeriodOutOfRangeSkipped: a paid invoice whose first line's
// period ends outside the years 1 to 9999 is skipped with a reason that
// says so, nothing granted, on both stores. Granted, its plan_until was
// stored as another year on PostgreSQL (pgx's microseconds wrap around),
// and /accounts/{id} answered 200 with an empty body, the time having no
// JSON form. The account's next invoice is granted as usual.
func TestInvoicePeriodOutOfRangeSkipped(t *testing.T) {
	t.Parallel()
	const (
		year3170843 = 99999999999999
		beforeYear1 = -62135596801 // 0000-12-31T23:59:59Z
		oct01       = 1759334400   // 2025-10-01T16:00:00Z
	)
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			svc := newStore(t, kind)
			c, _, _ := serve(t, svc, false, idempotency.InboxConfig{})
			c.deliverAll(idempotency.OutcomeSkipped,
				invoiceEndingAt(t, "evt_far_1", "in_far_1", "acct_far", year3170843),
				invoiceEndingAt(t, "evt_far_2", "in_far_2", "acct_far", beforeYear1),
			)
			for _, id := range []string{"evt_far_1", "evt_far_2"} {
				require.Equal(t, "invoice's first line period ends outside the years 1 to 9999", skipReason(t, svc, id), id)
			}
			status, body := c.get("/accounts/acct_far")
			require.Equal(t, http.StatusNotFound, status, body)

			c.deliverAll(idempotency.OutcomeProcessed, invoiceEndingAt(t, "evt_far_3", "in_far_3", "acct_far", oct01))
			status, body = c.get("/accounts/acct_far")
			require.Equal(t, http.StatusOK, status, body)
			require.JSONEq(t, `{"id":"acct_far","credits":100,"receipts":1,"plan_until":"2025-10-01T16:00:00Z"}`, body)
		})
	}
}

// skipReason is the Skip reason that the ledger of svc's store has for
// eventID, failing the test when it has no claim of it.
func skipReason(t *testing.T, svc service, eventID string) string {
	t.Helper()
	rec, ok, err := svc.store.(interface {
		LookupEvent(context.Context, string) (idempotency.EventRecord, bool, error)
	}).LookupEvent(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok, "%s has no claim", eventID)
	return rec.SkipReason
}
