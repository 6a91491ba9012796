package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxIngestLostAnswerWakesAtTheResend: an insert that stored the
// event while its answer was lost is answered 503, and wakes no worker;
// Stripe's resend is answered duplicate, and wakes this process's workers
// (and notifies the others), as the delivery that stored it would have:
// the event waited for the next poll (PollInterval). A duplicate of an
// event whose insert was answered wakes none, as before.
func TestInboxIngestLostAnswerWakesAtTheResend(t *testing.T) {
	t.Parallel()
	store, in, deliver := newLostAnswerInbox(t)

	store.Lose.Store(true)
	a := deliver("evt_lost_answer")
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	store.Lose.Store(false)
	woken := idempotency.InboxSignals(in)
	a = deliver("evt_lost_answer")
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Greater(t, idempotency.InboxSignals(in), woken, "the resend of an event whose insert went unanswered wakes the workers")

	woken = idempotency.InboxSignals(in)
	a = deliver("evt_lost_answer")
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Equal(t, woken, idempotency.InboxSignals(in), "a later resend wakes nothing")

	require.Equal(t, idempotency.OutcomeQueued, deliver("evt_answered").Outcome)
	woken = idempotency.InboxSignals(in)
	require.Equal(t, idempotency.OutcomeDuplicate, deliver("evt_answered").Outcome)
	require.Equal(t, woken, idempotency.InboxSignals(in), "an ordinary duplicate wakes nothing")
}
