package idempotency

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLocalClaimsRemembersBoundedRecentIDs(t *testing.T) {
	t.Parallel()
	l := newLocalClaims(2, time.Hour)
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
	l := newLocalClaims(4, time.Hour)
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

func TestRecentIDsExpireAndForget(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	r := newRecentIDs(4, time.Minute)
	r.now = func() time.Time { return now }
	r.add("a")
	r.add("b")
	require.True(t, r.has("a"))

	r.forget("a")
	require.False(t, r.has("a"), "a forgotten id is not remembered")
	require.True(t, r.has("b"))

	now = now.Add(59 * time.Second)
	r.add("b") // renewed
	now = now.Add(2 * time.Second)
	require.True(t, r.has("b"), "an id added again is remembered from then on")
	r.add("c")
	now = now.Add(time.Minute)
	require.False(t, r.has("b"), "an id is remembered for the TTL only")
	require.False(t, r.has("c"))

	// A forgotten id added again is remembered, whatever its old ring slot.
	r.add("a")
	require.True(t, r.has("a"))
}

// TestForgetDuringRunIsNotUndone: an id forgotten while a run of it was
// in flight (Forget or Prune deleted the claim that run found or made)
// is not remembered when the run ends; nor is an id found stored in the
// inbox while it was being forgotten.
func TestForgetDuringRunIsNotUndone(t *testing.T) {
	t.Parallel()
	l := newLocalClaims(4, time.Hour)
	_, release, err := l.acquire(context.Background(), "a")
	require.NoError(t, err)
	l.forget("a") // the claim the run found is deleted before it ends
	release(true)
	done, release, err := l.acquire(context.Background(), "a")
	require.NoError(t, err)
	require.False(t, done, "the forgotten id goes to the database")
	release(true)
	done, _, err = l.acquire(context.Background(), "a")
	require.NoError(t, err)
	require.True(t, done, "a run that ends with no forget in between is remembered")

	s := &storedIDs{ids: newRecentIDs(4, time.Hour)}
	since := s.since()
	s.forget("b")
	s.addSince("b", since)
	require.False(t, s.has("b"), "the inbox row found was deleted meanwhile")
	s.addSince("b", s.since())
	require.True(t, s.has("b"))
}
