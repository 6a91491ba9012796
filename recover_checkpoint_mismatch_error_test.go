package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointMismatchErrorHoldsTheCheckpointsOptions: each
// refusal with ErrCheckpointMismatch is a *CheckpointMismatchError that
// holds the options the checkpoint was started with, for a caller that
// words it in its own terms (idemctl, in its flags), and names each
// option the run differs in, in RecoverOptions' order; its text is the
// library's, naming RecoverOptions' fields, each with the checkpoint's
// value and the run's. (It named the first option that differed alone.)
func TestRecoverCheckpointMismatchErrorHoldsTheCheckpointsOptions(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		idempotency.On(app.hs, "charge.failed", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
		since := time.Now().Add(-time.Hour).Truncate(time.Second)
		f.add(snapshotEvent(t, "evt_cme_0", "invoice.paid", "in_cme_0", since.Add(time.Minute).Unix()))
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: since, Types: []string{"invoice.paid"}, OnlyUndelivered: true, Checkpoint: "cme"}
		_, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)

		earlier := since.Add(-time.Minute).UTC().Format(time.RFC3339)
		for _, c := range []struct {
			name      string
			edit      func(*idempotency.RecoverOptions)
			text      string
			differing []string
		}{
			{"earlier since", func(o *idempotency.RecoverOptions) { o.Since = o.Since.Add(-time.Minute) },
				"RecoverOptions.Since " + since.UTC().Format(time.RFC3339) + ", not the earlier " + earlier + ": " +
					"continue it with a Since at or after its own, or name another checkpoint for these", []string{"Since"}},
			{"other types", func(o *idempotency.RecoverOptions) { o.Types = nil },
				`RecoverOptions.Types ["invoice.paid"], not [] (every type): ` +
					"continue it with the options it was started with, or name another checkpoint for these", []string{"Types"}},
			{"all delivered", func(o *idempotency.RecoverOptions) { o.OnlyUndelivered = false },
				"RecoverOptions.OnlyUndelivered true, not false:", []string{"OnlyUndelivered"}},
			{"other account", func(o *idempotency.RecoverOptions) { o.Account = "acct_cme" },
				`RecoverOptions.Account "" (the platform's own account), not "acct_cme": ` +
					"continue it with the options it was started with, or name another checkpoint for these (one per account)", []string{"Account"}},
			{"every option", func(o *idempotency.RecoverOptions) {
				*o = idempotency.RecoverOptions{Since: o.Since.Add(-time.Minute), Types: []string{"invoice.paid", "charge.failed"}, Account: "acct_cme", Checkpoint: "cme"}
			}, `idempotency: recovery checkpoint started with other options: checkpoint "cme" has ` +
				"RecoverOptions.Since " + since.UTC().Format(time.RFC3339) + ", not the earlier " + earlier +
				`; Types ["invoice.paid"], not ["charge.failed" "invoice.paid"]; OnlyUndelivered true, not false; ` +
				`Account "" (the platform's own account), not "acct_cme": ` +
				"continue it with the options it was started with (a Since at or after its own), " +
				"or name another checkpoint for these (one per account)", []string{"Since", "Types", "OnlyUndelivered", "Account"}},
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
			require.Equal(t, c.differing, me.Differing, c.name)
		}
	})
}
