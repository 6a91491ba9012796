package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestSignalAfterTheLastStepIsNoInterruption: a SIGINT that lands after
// prune's last batch, or after recover stored its last event (the context
// cancelled once the work returned without an error), stopped nothing:
// the report is the one of a finished run and the exit code 0. Both said
// "interrupted" of a run that had finished, and exited 0. A run the
// signal stopped (it returns the context's error) is still interrupted.
func TestSignalAfterTheLastStepIsNoInterruption(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	var out bytes.Buffer
	a := &app{stdout: &out}
	err := a.pruneEnded(ctx, idempotency.PruneReport{Events: 3}, nil, false, false)
	require.NoError(t, err)
	require.Equal(t, exitOK, exitCode(ctx, err))
	require.Equal(t, "deleted 3 rows:\n", lines(out.String())[0]+"\n")

	out.Reset()
	require.NoError(t, a.pruneEnded(ctx, idempotency.PruneReport{Events: 3}, nil, false, true))
	require.False(t, decode[pruneJSON](t, result{stdout: out.String()}).Interrupted)

	out.Reset()
	err = a.pruneEnded(ctx, idempotency.PruneReport{Events: 3}, ctx.Err(), false, false)
	require.Equal(t, exitInterrupted, exitCode(ctx, err))
	require.Contains(t, out.String(), "interrupted: stopped between batches; 3 rows deleted")

	var stderr bytes.Buffer
	out.Reset()
	a = &app{stdout: &out, stderr: &stderr}
	run := recoverRun{types: []string{"invoice.paid"}, listed: map[string]int{"invoice.paid": 1}}
	rep := idempotency.RecoverReport{Listed: 1, Queued: 1, Requests: 1, LastEventID: "evt_1"}
	err = a.recoverEnded(ctx, run, rep, nil)
	require.NoError(t, err)
	require.Equal(t, exitOK, exitCode(ctx, err))
	require.NotContains(t, out.String(), "interrupted")
	require.Regexp(t, `(?m)^queued\s+1\s+stored pending`, out.String())

	out.Reset()
	run.asJSON = true
	require.NoError(t, a.recoverEnded(ctx, run, rep, nil))
	require.False(t, decode[recoverJSON](t, result{stdout: out.String()}).Interrupted)

	out.Reset()
	run.asJSON = false
	err = a.recoverEnded(ctx, run, rep, ctx.Err())
	require.Equal(t, exitInterrupted, exitCode(ctx, err))
	require.Contains(t, out.String(), "interrupted: the event in hand was finished")
	require.Empty(t, stderr.String())
}

// TestFailureWithoutASignalIsNoInterruption: a prune or a recovery that
// the store failed, no signal received, is reported stopped by its error,
// not interrupted, and exits 1.
func TestFailureWithoutASignalIsNoInterruption(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	failed := errors.New("connection refused")

	var out, stderr bytes.Buffer
	a := &app{stdout: &out, stderr: &stderr}
	err := a.pruneEnded(ctx, idempotency.PruneReport{Events: 3}, failed, false, true)
	require.ErrorIs(t, err, failed)
	require.Equal(t, exitFailed, exitCode(ctx, err))
	require.False(t, decode[pruneJSON](t, result{stdout: out.String()}).Interrupted)

	out.Reset()
	run := recoverRun{types: []string{"invoice.paid"}, listed: map[string]int{"invoice.paid": 1}, asJSON: true}
	err = a.recoverEnded(ctx, run, idempotency.RecoverReport{Listed: 1, Requests: 1}, failed)
	require.ErrorIs(t, err, failed)
	require.Equal(t, exitFailed, exitCode(ctx, err))
	require.False(t, decode[recoverJSON](t, result{stdout: out.String()}).Interrupted, "the report of a recovery the store failed")
}
