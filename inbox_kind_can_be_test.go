package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxKindCanBe: an event can be in every state, a task in every
// state but ignored, and the empty kind (both together) in every state:
// the one rule Redrive's checks, idemctl stats, the dashboard's counts and
// otel's depth gauge read.
func TestInboxKindCanBe(t *testing.T) {
	t.Parallel()
	for _, st := range idempotency.InboxStates() {
		require.True(t, idempotency.KindEvent.CanBe(st), st)
		require.True(t, idempotency.InboxKind("").CanBe(st), st)
		require.Equal(t, st != idempotency.InboxIgnored, idempotency.KindTask.CanBe(st), st)
	}
}
