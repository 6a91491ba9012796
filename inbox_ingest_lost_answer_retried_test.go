package idempotency_test

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxInboxIngestLostAnswerRetriedWakes: the insert that stores a
// delivered event went through while its connection dropped before the
// answer, which reads as a connection the server closed while it sat in
// the pool; the store inserts again on another connection, which finds the
// event stored. The delivery is answered duplicate, 200, and wakes the
// workers, as a delivery that stored the event does: it waited for the
// next poll (PollInterval). A later duplicate wakes none.
func TestPgxInboxIngestLostAnswerRetriedWakes(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	insert := []byte(".idempotency_inbox (event_id, event_type, object_id, account, livemode, api_version, created,")
	store := answerLostStore(t, &armed, func(b []byte) bool { return bytes.Contains(b, insert) }, "INSERT 0 1\x00")
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	payload := invoicePayload(t, "evt_ingest_lost", "in_ingest_lost", "acct_1")

	woken := idempotency.InboxSignals(in)
	armed.Store(true)
	a := idempotencytest.Deliver(h, payload, testSecret)
	require.False(t, armed.Load(), "the insert was sent and its answer lost")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, "the retry found it stored")
	require.Greater(t, idempotency.InboxSignals(in), woken, "a delivery whose insert may have stored the event wakes the workers")
	rec, ok, err := in.Lookup(t.Context(), "evt_ingest_lost")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxPending, rec.State)

	woken = idempotency.InboxSignals(in)
	require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, payload, testSecret).Outcome)
	require.Equal(t, woken, idempotency.InboxSignals(in), "an ordinary duplicate wakes nothing")

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, idempotency.InboxProcessed, idempotencyLookupState(t, in, "evt_ingest_lost"))
}
