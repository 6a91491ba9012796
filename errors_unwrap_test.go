package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

var errCardDeclined = errors.New("card declined")

// TestResultErrReachesTheCause: the error types that carry a cause unwrap
// to it, so that errors.Is and errors.As on Result.Err find it: the error
// a handler panicked with (PanicError.Unwrap), the decoder's error
// (DecodeError.Unwrap) and the error given to Permanent
// (PermanentError.Unwrap). (No test failed when any of them unwrapped to
// nil.)
func TestResultErrReachesTheCause(t *testing.T) {
	t.Parallel()

	t.Run("panic", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, idempotency.Config{}, failing(func(context.Context) error {
			panic(fmt.Errorf("charging: %w", errCardDeclined))
		}))
		b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_unwrap_panic", paid), testSecret))
		res := b.lastResult(t)
		var p *idempotency.PanicError
		require.ErrorAs(t, res.Err, &p)
		require.ErrorIs(t, res.Err, errCardDeclined, "the error the handler panicked with")
	})

	t.Run("decode", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, _ *bench) {
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct {
				AmountDue string `json:"amount_due"`
			}]) error {
				return nil
			})
		})
		b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_unwrap_decode", paid), testSecret))
		res := b.lastResult(t)
		var typeErr *json.UnmarshalTypeError
		require.ErrorAs(t, res.Err, &typeErr, "the decoder's error")
		require.Equal(t, "amount_due", typeErr.Field)
	})

	t.Run("permanent", func(t *testing.T) {
		t.Parallel()
		r := newMisuseRig()
		hs := idempotency.NewHandlers()
		task := idempotency.NewTask(hs, "charge", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
			return fmt.Errorf("charging: %w", idempotency.Permanent(errCardDeclined))
		})
		r.enqueue(t, "evt_unwrap_permanent", func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
			return err
		})
		var rs misuseResults
		in := r.inbox(t, hs, idempotency.InboxConfig{OnResult: rs.add})
		misuseWork(t, in, 1)
		res := rs.last(t)
		require.Equal(t, idempotency.InboxDeadLetter, res.State)
		var pe *idempotency.PermanentError
		require.ErrorAs(t, res.Err, &pe)
		require.ErrorIs(t, res.Err, errCardDeclined, "the error given to Permanent")
	})
}

// TestPermanentWithoutReason: Permanent(nil) dead-letters the task at once
// as any Permanent does, with a reason that says none was given, rather
// than an error whose Error method panics (which is retried as an
// ordinary failure). (No test failed when nil was kept.)
func TestPermanentWithoutReason(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "charge", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return idempotency.Permanent(nil)
	})
	r.enqueue(t, "evt_permanent_nil", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	in := r.inbox(t, hs, idempotency.InboxConfig{OnResult: rs.add})
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("in_1"))
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Equal(t, "idempotency: permanent failure: no reason given", rec.LastError)
	var pe *idempotency.PermanentError
	require.ErrorAs(t, rs.last(t).Err, &pe)
}

// jsonInText is a field whose text holds JSON of its own, decoded by its
// UnmarshalJSON: what the payload has there may not be JSON.
type jsonInText struct{ v any }

func (j *jsonInText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return json.Unmarshal([]byte(s), &j.v)
}

// TestDecodeErrorSyntaxNamesTheOffset: a type's UnmarshalJSON that fails
// with a syntax error is described by the offset, not by the decoder's
// message, which quotes the payload's character there. (No test failed
// when that message was used.)
func TestDecodeErrorSyntaxNamesTheOffset(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, _ *bench) {
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct {
			Metadata struct {
				Account jsonInText `json:"account_id"`
			} `json:"metadata"`
		}]) error {
			return nil
		})
	})
	b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_decode_syntax", map[string]string{"account_id": "zq_secret"}), testSecret))
	err := b.lastResult(t).Err
	var de *idempotency.DecodeError
	require.ErrorAs(t, err, &de)
	require.Contains(t, err.Error(), "invalid JSON at offset 1")
	require.NotContains(t, err.Error(), "'z'", "the payload's character")
	require.NotContains(t, b.logs.String(), "'z'")
}
