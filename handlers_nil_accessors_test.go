package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestHandlersNilAccessors: a nil *Handlers (declared where NewHandlers'
// result was meant) has no event types and no actions: EventTypes,
// Actions and WriteOwnershipTable answer as an empty Handlers does,
// without panicking, as Name and ID of a nil Task or Action return "".
// They panicked on a nil pointer.
func TestHandlersNilAccessors(t *testing.T) {
	t.Parallel()
	var hs *idempotency.Handlers
	require.NotPanics(t, func() {
		require.Equal(t, idempotency.NewHandlers().EventTypes(), hs.EventTypes())
		require.Equal(t, idempotency.NewHandlers().Actions(), hs.Actions())
		var empty, nilTable strings.Builder
		require.NoError(t, idempotency.NewHandlers().WriteOwnershipTable(&empty))
		require.NoError(t, hs.WriteOwnershipTable(&nilTable))
		require.Equal(t, empty.String(), nilTable.String())
		require.Contains(t, nilTable.String(), "ACTION")
	})
}
