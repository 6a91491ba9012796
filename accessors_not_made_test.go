package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestAccessorsOfATaskOrActionNotMade: a Task or an Action that NewTask
// or NewAction did not return (a nil one, declared where the
// constructor's result was meant, or a zero one) has no name and no ids:
// Name and ID return "" without panicking, as Inbox.MaxAttempts returns 0
// and Enqueue and Do fail on them. A nil one's Name and ID panicked on a
// nil pointer; a zero Task's ID was "task::<key>", an id no task has,
// which Inbox.Lookup answered not found where "" is refused.
func TestAccessorsOfATaskOrActionNotMade(t *testing.T) {
	t.Parallel()
	tasks := []*idempotency.Task[string]{nil, {}}
	for i, task := range tasks {
		name := []string{"nil", "zero"}[i]
		require.NotPanics(t, func() {
			require.Empty(t, task.Name(), name)
			require.Empty(t, task.ID("in_1"), name)
		}, name)
	}
	actions := []*idempotency.Action[string]{nil, {}}
	for i, action := range actions {
		name := []string{"nil", "zero"}[i]
		require.NotPanics(t, func() { require.Empty(t, action.Name(), name) }, name)
	}
}
