package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestDecodeErrorOfTheWholeValueNamesNoField: a data.object that is not
// the kind of JSON value the handler's type decodes (an object for a
// slice) fails with a DecodeError that names the kinds and no field,
// with either decoder: it named the field "", as if one had no name.
func TestDecodeErrorOfTheWholeValueNamesNoField(t *testing.T) {
	t.Parallel()
	for _, disableFast := range []bool{false, true} {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[[]string]) error {
			return nil
		})
		var res idempotency.Result
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), DisableFastDecoder: disableFast,
			OnResult: func(r idempotency.Result) { res = r },
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, invoiceEvent("evt_whole_value", "invoice.paid", nil), testSecret)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		require.EqualError(t, res.Err, "idempotency: decoding data.object of invoice.paid event into []string: cannot decode a JSON object into []string",
			"DisableFastDecoder %v", disableFast)
	}
}

// TestTaskArgsOfAnotherKindNameNoField: a task's stored arguments whose
// kind of JSON is not its type's as a whole (an object for a slice)
// dead-letter it with an error that names the kinds and no field.
func TestTaskArgsOfAnotherKindNameNoField(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	before := idempotency.NewHandlers()
	task := idempotency.NewTask(before, "remind", func(context.Context, idempotency.TaskRun[struct{ At string }]) error { return nil })
	r.enqueue(t, "evt_remind_kind", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", struct{ At string }{At: "tuesday"})
		return err
	})

	after := idempotency.NewHandlers()
	idempotency.NewTask(after, "remind", func(context.Context, idempotency.TaskRun[[]string]) error { return nil })
	in := r.inbox(t, after, idempotency.InboxConfig{})
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("k"))
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Contains(t, rec.LastError, "decoding the arguments of task remind: cannot decode a JSON object into []string")
}
