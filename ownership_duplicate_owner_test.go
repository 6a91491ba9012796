package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestNewActionRefusesAnOwnerListedTwice: an ActionSpec whose Owners list
// one event type twice is refused, naming the action, both indexes and
// the type, by NewActionSafely with an error and by NewAction with a
// panic; nothing is declared. (It was taken, and the ownership table
// listed the type twice.)
func TestNewActionRefusesAnOwnerListedTwice(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, idempotency.Tx, string, int) error { return nil }
	spec := idempotency.ActionSpec{Name: "grant-invoice", Key: "invoice id",
		Owners: []string{"invoice.paid", "invoice.payment_succeeded", "invoice.paid"}}
	hs := idempotency.NewHandlers()
	_, err := idempotency.NewActionSafely(hs, spec, fn)
	require.EqualError(t, err, `idempotency: NewAction "grant-invoice": ActionSpec.Owners[2] "invoice.paid" is Owners[0] again; list each owner once`)
	require.Empty(t, hs.Actions())
	require.PanicsWithError(t, err.Error(), func() { idempotency.NewAction(hs, spec, fn) })
	require.Empty(t, hs.Actions())

	spec.Owners = spec.Owners[:2]
	_, err = idempotency.NewActionSafely(hs, spec, fn)
	require.NoError(t, err)
	require.Equal(t, []string{"invoice.paid", "invoice.payment_succeeded"}, hs.Actions()[0].Owners)
}
