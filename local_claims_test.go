package idempotency

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLocalClaimsRemembersBoundedRecentIDs(t *testing.T) {
	t.Parallel()
	l := newLocalClaims(2)
	for _, id := range []string{"a", "b", "c"} {
		done, release, err := l.acquire(context.Background(), id)
		require.NoError(t, err)
		require.False(t, done)
		release(true)
	}
	for id, want := range map[string]bool{"a": false, "b": true, "c": true} {
		done, release, err := l.acquire(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, want, done, "id %s", id)
		if release != nil {
			release(false)
		}
	}
	require.Len(t, l.recent.set, 2)
}

func TestLocalClaimsFailedRunIsNotRemembered(t *testing.T) {
	t.Parallel()
	l := newLocalClaims(4)
	_, release, err := l.acquire(context.Background(), "a")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := l.acquire(ctx, "a")
		errc <- err
	}()
	require.Eventually(t, func() bool { return l.waiters() == 1 }, time.Minute, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Zero(t, l.waiters())

	release(false)
	done, release, err := l.acquire(context.Background(), "a")
	require.NoError(t, err)
	require.False(t, done, "a failed run leaves the id to the database")
	release(true)
}
