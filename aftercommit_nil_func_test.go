package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// AfterCommit(nil) registers nothing: the commit runs no nil func, so no
// panic is reported for it, and the funcs around it run. (No test failed
// when a nil fn was kept and called after the commit.)
func TestAfterCommitNilFuncIsIgnored(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var panics []*idempotency.PanicError
			var ran []string
			c := idempotency.Claim{EventID: "evt_after_commit_nil", OnAfterCommitPanic: func(p *idempotency.PanicError) { panics = append(panics, p) }}
			out, err := store.Run(t.Context(), c, func(_ context.Context, tx idempotency.Tx) error {
				tx.AfterCommit(func(context.Context) { ran = append(ran, "before") })
				tx.AfterCommit(nil)
				tx.AfterCommit(func(context.Context) { ran = append(ran, "after") })
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			require.Empty(t, panics)
			require.Equal(t, []string{"before", "after"}, ran)
		})
	}
}
