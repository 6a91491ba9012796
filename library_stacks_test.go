package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestLibraryStacksShowWhereACallWaits: the message of a wait that ran
// out (recv) shows the stack of a call of the library's that has not
// returned, and leaves out the goroutines of the tests alone.
func TestLibraryStacksShowWhereACallWaits(t *testing.T) {
	store := idempotency.NewMemoryStore()
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_library_stacks", EventType: "invoice.paid"},
			func(context.Context, idempotency.Tx) error {
				close(entered)
				<-release
				return nil
			})
		done <- err
	}()
	<-entered
	stacks := libraryStacks()
	close(release)
	require.NoError(t, <-done)
	require.Contains(t, stacks, "idempotency.(*MemoryStore).Run", "the waiting call's stack")
	require.NotContains(t, stacks, "idempotency_test.libraryStacks", "the goroutine of the test alone")
}
