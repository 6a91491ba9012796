package idempotency_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointMismatchErrorHoldsTheCheckpointsOptions: each
// refusal with ErrCheckpointMismatch is a *CheckpointMismatchError that
// holds the options the checkpoint was started with, for a caller that
// words it in its own terms (idemctl, in its flags); its text is the
// library's, naming RecoverOptions' fields.
func TestRecoverCheckpointMismatchErrorHoldsTheCheckpointsOptions(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		since := time.Now().Add(-time.Hour).Truncate(time.Second)
		f.add(snapshotEvent(t, "evt_cme_0", "invoice.paid", "in_cme_0", since.Add(time.Minute).Unix()))
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: since, Types: []string{"invoice.paid"}, OnlyUndelivered: true, Checkpoint: "cme"}
		_, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)

		for _, c := range []struct {
			name string
			edit func(*idempotency.RecoverOptions)
			text string
		}{
			{"earlier since", func(o *idempotency.RecoverOptions) { o.Since = o.Since.Add(-time.Minute) }, "RecoverOptions.Since"},
			{"other types", func(o *idempotency.RecoverOptions) { o.Types = nil }, `lists types "invoice.paid"`},
			{"all delivered", func(o *idempotency.RecoverOptions) { o.OnlyUndelivered = false }, "only undelivered: true"},
			{"other account", func(o *idempotency.RecoverOptions) { o.Account = "acct_cme" }, "the platform's own account"},
		} {
			o := opts
			c.edit(&o)
			_, err := h.Recover(t.Context(), client, o)
			require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch, c.name)
			require.ErrorContains(t, err, c.text, c.name)
			me, ok := errors.AsType[*idempotency.CheckpointMismatchError](err)
			require.True(t, ok, "%s: %T", c.name, err)
			require.Equal(t, "cme", me.Checkpoint, c.name)
			require.True(t, since.Equal(me.Since), "%s: %s", c.name, me.Since)
			require.Empty(t, me.Account, c.name)
			require.Equal(t, []string{"invoice.paid"}, me.Types, c.name)
			require.True(t, me.OnlyUndelivered, c.name)
		}
	})
}
