package idempotency_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// leakyArgs fails to encode with a text that quotes its value, as a
// MarshalJSON that validates its fields may.
type leakyArgs struct{ Card string }

func (a leakyArgs) MarshalJSON() ([]byte, error) {
	return nil, errors.New("card " + a.Card + " is not allowed")
}

// TestEnqueueEncodingErrorQuotesNoValue: arguments that do not encode as
// JSON fail Enqueue with an error that names the task, the arguments' Go
// type and the kind of failure, never a value: encoding/json's text of a
// MarshalJSON's failure is the method's own, which may quote what it
// encodes, and that of an unsupported value quotes the value. Nothing is
// stored.
func TestEnqueueEncodingErrorQuotesNoValue(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	leaky := idempotency.NewTask(hs, "charge", func(context.Context, idempotency.TaskRun[leakyArgs]) error { return nil })
	floats := idempotency.NewTask(hs, "ratio", func(context.Context, idempotency.TaskRun[float64]) error { return nil })
	chans := idempotency.NewTask(hs, "notify", func(context.Context, idempotency.TaskRun[chan int]) error { return nil })
	var leakyErr, floatErr, chanErr error
	r.enqueue(t, "evt_encode_error", func(ctx context.Context, tx idempotency.Tx) error {
		_, leakyErr = leaky.Enqueue(ctx, tx, "in_1", leakyArgs{Card: "4242424242424242"})
		_, floatErr = floats.Enqueue(ctx, tx, "in_1", math.Inf(1))
		_, chanErr = chans.Enqueue(ctx, tx, "in_1", make(chan int))
		return nil
	})
	require.EqualError(t, leakyErr, "idempotency: task charge: its arguments, a idempotency_test.leakyArgs, do not encode as JSON: a MarshalJSON or MarshalText method failed")
	require.EqualError(t, floatErr, "idempotency: task ratio: its arguments, a float64, do not encode as JSON: a value JSON cannot hold (NaN, an infinity, a cycle)")
	require.EqualError(t, chanErr, "idempotency: task notify: its arguments, a chan int, do not encode as JSON: it holds a chan int, a type JSON cannot hold")
	for _, err := range []error{leakyErr, floatErr} {
		for e := err; e != nil; e = errors.Unwrap(e) {
			require.NotContains(t, e.Error(), "4242", "no error in the chain quotes the value")
			require.NotContains(t, e.Error(), "Inf")
		}
	}
	in := r.inbox(t, hs, idempotency.InboxConfig{})
	for _, id := range []string{leaky.ID("in_1"), floats.ID("in_1"), chans.ID("in_1")} {
		_, ok, err := in.Lookup(t.Context(), id)
		require.NoError(t, err)
		require.False(t, ok, "nothing stored")
	}
}
