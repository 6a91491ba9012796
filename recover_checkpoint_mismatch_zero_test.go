package idempotency_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestCheckpointMismatchErrorMadeByACaller: a *CheckpointMismatchError
// made outside Recover (by a fake of Recover in a caller's test of how it
// words the refusal) is ErrCheckpointMismatch and names its checkpoint,
// as SkipError and PermanentError made by a caller are what they say.
func TestCheckpointMismatchErrorMadeByACaller(t *testing.T) {
	t.Parallel()
	var err error = &idempotency.CheckpointMismatchError{Checkpoint: "daily", Account: "acct_1"}
	require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch)
	require.EqualError(t, err, `idempotency: recovery checkpoint started with other options: checkpoint "daily"`)
	me, ok := errors.AsType[*idempotency.CheckpointMismatchError](err)
	require.True(t, ok)
	require.Equal(t, "acct_1", me.Account)
}
