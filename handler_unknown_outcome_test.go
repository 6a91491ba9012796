package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// outcomeStore is a Store of another package whose Run answers outcome
// and err, whatever the claim.
type outcomeStore struct {
	*idempotency.MemoryStore
	outcome idempotency.Outcome
	err     error
}

func (s outcomeStore) Run(context.Context, idempotency.Claim, idempotency.ApplyFunc) (idempotency.Outcome, error) {
	return s.outcome, s.err
}

// TestHandlerUnknownStoreOutcomeIsAFailure: a Store that answers Run with
// an outcome no delivery can have (none, or one of the inbox's), or with
// an error beside an outcome of success, is answered 500, and OnResult is told the delivery failed, as the answer
// says, not the store's outcome.
func TestHandlerUnknownStoreOutcomeIsAFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		outcome idempotency.Outcome
		err     error
	}{
		{"no outcome", "", errors.New("the store failed")},
		{"an outcome of no delivery", "retried", nil},
		// The inbox's answer, from a Store's Run: nothing queues the event.
		{"queued", idempotency.OutcomeQueued, nil},
		// A non-nil error means nothing was applied (Store.Run's
		// contract), whatever the outcome beside it: 200 would end
		// Stripe's retries of an event never applied.
		{"processed with an error", idempotency.OutcomeProcessed, errors.New("commit: connection reset")},
		{"duplicate with an error", idempotency.OutcomeDuplicate, errors.New("waiting for the claim: canceled")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			results := make(chan idempotency.Result, 1)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
			h, err := idempotency.NewHandler(outcomeStore{idempotency.NewMemoryStore(), tc.outcome, tc.err}, hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: func(r idempotency.Result) { results <- r },
			})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_odd_outcome", paid), testSecret)
			require.Equal(t, 500, a.Status, a.Body)
			require.Equal(t, `{"error":"processing_failed"}`, a.Body)
			r := <-results
			require.Equal(t, idempotency.OutcomeFailed, r.Outcome, "the Result of a delivery answered 500")
			require.Equal(t, 500, r.Status)
			require.Error(t, r.Err, "Result.Err is nil only for a 200")
		})
	}
}

// TestHandlerStoreUnavailableIsAnsweredUnavailable: a Store whose Run
// fails with an error wrapping ErrStoreUnavailable beside OutcomeFailed
// (not OutcomeUnavailable) has the delivery answered 503
// store_unavailable, as ErrStoreUnavailable says, not 500. (No test
// failed when the dispatcher no longer read ErrStoreUnavailable in Run's
// error: PgxStore answers OutcomeUnavailable with it.)
func TestHandlerStoreUnavailableIsAnsweredUnavailable(t *testing.T) {
	t.Parallel()
	results := make(chan idempotency.Result, 1)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
	unreachable := fmt.Errorf("%w: connection refused", idempotency.ErrStoreUnavailable)
	h, err := idempotency.NewHandler(outcomeStore{idempotency.NewMemoryStore(), idempotency.OutcomeFailed, unreachable}, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: func(r idempotency.Result) { results <- r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_unreachable", paid), testSecret)
	require.Equal(t, 503, a.Status, a.Body)
	require.Equal(t, `{"error":"store_unavailable"}`, a.Body)
	r := <-results
	require.Equal(t, idempotency.OutcomeUnavailable, r.Outcome)
	require.ErrorIs(t, r.Err, idempotency.ErrStoreUnavailable)
}
