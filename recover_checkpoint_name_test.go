package idempotency_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverRefusesACheckpointNameNoStoreCanKeep: a checkpoint name longer
// than a key a store indexes is refused with ErrInvalidKey before any
// request, on both stores alike, rather than kept by MemoryStore and
// failing PostgreSQL's primary key after the first page was applied, on
// every run.
func TestRecoverRefusesACheckpointNameNoStoreCanKeep(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now()
		for i := range 3 {
			f.add(snapshotEvent(t, fmt.Sprintf("evt_long_name_%d", i), "invoice.paid", fmt.Sprintf("in_long_name_%d", i), now.Add(-time.Duration(3-i)*time.Minute).Unix()))
		}
		// Random letters: PostgreSQL cannot compress them below a btree
		// entry's 2704 bytes.
		name := make([]byte, 4000)
		rnd := rand.New(rand.NewPCG(1, 2))
		for i := range name {
			name[i] = byte('a' + rnd.IntN(26))
		}
		h := app.handler(t)
		rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: now.Add(-time.Hour), Checkpoint: string(name)})
		require.ErrorIs(t, err, idempotency.ErrInvalidKey)
		require.Contains(t, err.Error(), "RecoverOptions.Checkpoint")
		require.Zero(t, rep.Requests)
		require.Empty(t, f.calls(), "no request made")
		require.Empty(t, app.appliedOrder(), "no event applied")
	})
}
