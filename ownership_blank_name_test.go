package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestNewActionRefusesABlankOrPaddedName: an action's name is part of its
// guard scope, so a name of white space only, or one with white space at
// its ends ("grant-plan\n" read from a file) or a control character in it,
// would be an action of its own, with keys of its own: "grant-plan " would
// run again for every key "grant-plan" ran for. NewAction refuses it, and a
// Key of white space only, which says nothing in the ownership table, and
// each error names the ActionSpec field; nothing is registered.
func TestNewActionRefusesABlankOrPaddedName(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, idempotency.Tx, string, int) error { return nil }
	for _, tc := range []struct {
		spec idempotency.ActionSpec
		want string
	}{
		{idempotency.ActionSpec{Name: " ", Key: "invoice id"}, `NewAction " ": ActionSpec.Name has leading or trailing white space`},
		{idempotency.ActionSpec{Name: "grant-plan ", Key: "invoice id"}, `NewAction "grant-plan ": ActionSpec.Name has leading or trailing white space`},
		{idempotency.ActionSpec{Name: "\tgrant-plan", Key: "invoice id"}, `NewAction "\tgrant-plan": ActionSpec.Name has leading or trailing white space`},
		{idempotency.ActionSpec{Name: "grant\nplan", Key: "invoice id"}, `NewAction "grant\nplan": ActionSpec.Name has leading or trailing white space or a control character`},
		{idempotency.ActionSpec{Name: "", Key: "invoice id"}, `ActionSpec.Name is empty`},
		{idempotency.ActionSpec{Name: "grant-plan", Key: " \n"}, `ActionSpec.Key is empty`},
		{idempotency.ActionSpec{Name: "grant-plan", Key: ""}, `ActionSpec.Key is empty`},
	} {
		hs := idempotency.NewHandlers()
		_, err := idempotency.NewActionSafely(hs, tc.spec, fn)
		require.ErrorContains(t, err, tc.want, "%q", tc.spec)
		require.Empty(t, hs.Actions(), "%q", tc.spec)
		require.PanicsWithError(t, err.Error(), func() { idempotency.NewAction(hs, tc.spec, fn) })
	}
	// White space inside a name is a name.
	hs := idempotency.NewHandlers()
	_, err := idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: "grant plan", Key: "invoice id"}, fn)
	require.NoError(t, err)
}
