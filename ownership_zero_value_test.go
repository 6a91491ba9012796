package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestActionNotMadeByNewActionIsRefused: an Action that NewAction did not
// return (a zero Action, or a nil one, declared where NewAction's result
// was meant) has no name and no func. Its Do fails, naming NewAction, and
// claims no key: it claimed the key of the guard scope "action:" and then
// panicked on the nil func.
func TestActionNotMadeByNewActionIsRefused(t *testing.T) {
	t.Parallel()
	for name, action := range map[string]*idempotency.Action[string]{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := idempotency.NewMemoryStore()
			ran := true
			var err error
			out, runErr := store.Run(t.Context(), idempotency.Claim{EventID: "evt_zero_action", EventType: "invoice.paid", ReceivedAt: time.Now()},
				func(ctx context.Context, tx idempotency.Tx) error {
					require.NotPanics(t, func() { ran, err = action.Do(ctx, tx, "in_1", "grant") })
					return err
				})
			require.ErrorContains(t, err, "NewAction")
			require.ErrorIs(t, runErr, err)
			require.False(t, ran)
			require.Equal(t, idempotency.OutcomeFailed, out)
			_, ok, lookErr := store.LookupGuard(t.Context(), "action:", "in_1")
			require.NoError(t, lookErr)
			require.False(t, ok, "no key claimed")
		})
	}
}
