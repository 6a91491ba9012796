package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskArgsDecodeErrorQuotesNoArgument: a task whose stored arguments
// no longer decode is dead-lettered with an error that names the task,
// the field and the types, and never a value of the arguments: not in its
// LastError, nor in the Result. (encoding/json's own message quotes a
// number that overflows the field, or a fraction into an integer.)
func TestTaskArgsDecodeErrorQuotesNoArgument(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	before := idempotency.NewHandlers()
	type wide struct {
		Account int64   `json:"account"`
		Amount  float64 `json:"amount"`
	}
	task := idempotency.NewTask(before, "book-payment", func(context.Context, idempotency.TaskRun[wide]) error { return nil })
	r.enqueue(t, "evt_wide", func(ctx context.Context, tx idempotency.Tx) error {
		if _, err := task.Enqueue(ctx, tx, "overflow", wide{Account: 4111111111111111}); err != nil {
			return err
		}
		_, err := task.Enqueue(ctx, tx, "fraction", wide{Amount: 987.65})
		return err
	})

	after := idempotency.NewHandlers()
	idempotency.NewTask(after, "book-payment", func(context.Context, idempotency.TaskRun[struct {
		Account int32 `json:"account"` // narrower than before
		Amount  int   `json:"amount"`  // was a float
	}]) error {
		return nil
	})
	results := &misuseResults{}
	in := r.inbox(t, after, idempotency.InboxConfig{OnResult: results.add})
	misuseWork(t, in, 2)
	for key, secret := range map[string]string{"overflow": "4111111111111111", "fraction": "987.65"} {
		rec := misuseLookup(t, in, task.ID(key))
		require.Equal(t, idempotency.InboxDeadLetter, rec.State, key)
		require.Contains(t, rec.LastError, "decoding the arguments of task book-payment", key)
		require.Contains(t, rec.LastError, "number", key)
		require.NotContains(t, rec.LastError, secret, "LastError quotes the arguments")
	}
	require.Len(t, results.all, 2)
	for _, res := range results.all {
		require.NotContains(t, res.Err.Error(), "4111111111111111", "Result.Err quotes the arguments")
		require.NotContains(t, res.Err.Error(), "987.65", "Result.Err quotes the arguments")
		var perm *idempotency.PermanentError
		require.True(t, errors.As(res.Err, &perm), "dead-lettered as permanent")
	}
}

// TestTaskArgsRefusedByTheirTypeAreNotCalledInvalidJSON: stored arguments
// that are valid JSON but that a field's own decoder refuses (a time that
// no longer parses, an enum value removed) dead-letter the task with an
// error that says so, and quotes none of them; it said "invalid JSON",
// which sent the operator looking for corrupt rows.
func TestTaskArgsRefusedByTheirTypeAreNotCalledInvalidJSON(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	before := idempotency.NewHandlers()
	type loose struct {
		At string `json:"at"`
	}
	task := idempotency.NewTask(before, "remind", func(context.Context, idempotency.TaskRun[loose]) error { return nil })
	r.enqueue(t, "evt_remind", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "k", loose{At: "next tuesday 4111"})
		return err
	})

	after := idempotency.NewHandlers()
	idempotency.NewTask(after, "remind", func(context.Context, idempotency.TaskRun[struct {
		At time.Time `json:"at"` // its UnmarshalJSON refuses the stored text
	}]) error {
		return nil
	})
	in := r.inbox(t, after, idempotency.InboxConfig{})
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("k"))
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Contains(t, rec.LastError, "decoding the arguments of task remind")
	require.NotContains(t, rec.LastError, "invalid JSON", "the stored JSON is valid")
	require.Contains(t, rec.LastError, "refused by its type's decoder")
	require.NotContains(t, rec.LastError, "4111", "LastError quotes the arguments")
}
