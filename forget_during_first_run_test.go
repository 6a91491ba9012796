package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestForgetDuringFirstRunNotFound pins what PgxStore.Forget documents:
// an event whose first delivery is being applied synchronously while
// Forget runs is not found (its claim is not committed), Forget does not
// wait for it, and the event is known once the run commits; a Forget
// after that forgets it. Both stores alike.
func TestForgetDuringFirstRunNotFound(t *testing.T) {
	t.Parallel()
	type store interface {
		idempotency.Store
		Forget(ctx context.Context, eventID string) (bool, error)
		LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
	}
	for name, s := range map[string]store{"memory": idempotency.NewMemoryStore(), "postgres": newPgBackend(t, idempotency.PgxConfig{}).store} {
		started, release := make(chan struct{}), make(chan struct{})
		type result struct {
			outcome idempotency.Outcome
			err     error
		}
		done := make(chan result, 1)
		go func() {
			out, err := s.Run(context.Background(), idempotency.Claim{EventID: "evt_in_flight", EventType: "invoice.paid"},
				func(context.Context, idempotency.Tx) error {
					close(started)
					<-release
					return nil
				})
			done <- result{out, err}
		}()
		recv(t, started, name+": the run applies the event")
		found, err := s.Forget(t.Context(), "evt_in_flight")
		close(release)
		require.NoError(t, err, name)
		require.False(t, found, "%s: the claim in flight is not committed", name)
		r := recv(t, done, name+": the run")
		require.NoError(t, r.err, name)
		require.Equal(t, idempotency.OutcomeProcessed, r.outcome, name)
		_, known, err := s.LookupEvent(t.Context(), "evt_in_flight")
		require.NoError(t, err, name)
		require.True(t, known, "%s: known once the run committed", name)
		found, err = s.Forget(t.Context(), "evt_in_flight")
		require.NoError(t, err, name)
		require.True(t, found, "%s: a Forget after it forgets it", name)
	}
}
