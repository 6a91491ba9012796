package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxIngestLostAnswerKeepsTheLatest: the events a process answered
// 503 and whose retry never came back to it (retried to another replica,
// or given up by Stripe) do not crowd out the newer ones: once 1,024 are
// kept, a new one replaces the oldest, and its retry, answered duplicate,
// still wakes the workers.
func TestInboxIngestLostAnswerKeepsTheLatest(t *testing.T) {
	t.Parallel()
	store, in, deliver := newLostAnswerInbox(t)

	store.Lose.Store(true)
	for i := range 1024 {
		a := deliver(fmt.Sprintf("evt_retried_elsewhere_%d", i))
		require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	}
	a := deliver("evt_lost_answer_latest")
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	store.Lose.Store(false)

	woken := idempotency.InboxSignals(in)
	a = deliver("evt_lost_answer_latest")
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Greater(t, idempotency.InboxSignals(in), woken, "the resend of the latest event answered 503 wakes the workers")

	woken = idempotency.InboxSignals(in)
	a = deliver("evt_retried_elsewhere_0")
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Equal(t, woken, idempotency.InboxSignals(in), "the oldest, replaced, wakes nothing")
	a = deliver("evt_retried_elsewhere_1023")
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Greater(t, idempotency.InboxSignals(in), woken, "a newer one is still kept")
}

// newLostAnswerInbox is an Inbox on a LostAnswerStore, with a deliver
// that sends its Handler a signed invoice.paid of the given id.
func newLostAnswerInbox(t *testing.T) (*idempotency.LostAnswerStore, *idempotency.Inbox, func(eventID string) idempotencytest.Answer) {
	t.Helper()
	store := &idempotency.LostAnswerStore{MemoryStore: idempotency.NewMemoryStore()}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	deliver := func(eventID string) idempotencytest.Answer {
		return idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_lost_answer", "acct_1"), testSecret)
	}
	return store, in, deliver
}
