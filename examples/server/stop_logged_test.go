package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMainStopIsLogged: a SIGTERM to a serving server is logged as the
// stop starts, naming the signal, and once it has stopped, with how long
// that took and whether what was in flight finished before its deadline.
// The server stopped without a line.
func TestMainStopIsLogged(t *testing.T) {
	t.Parallel()
	stderr := newLogWatch("msg=listening")
	cmd, exited := startMain(t, stderr, "-addr", "127.0.0.1:0", "-secret", secret)
	select {
	case <-stderr.matched:
	case err := <-exited:
		exited <- err
		t.Fatalf("exited before serving: %v\n%s", err, stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("not serving within 30 s:\n%s", stderr)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err
		require.NoError(t, err, "%s", stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("still serving 30 s after SIGTERM:\n%s", stderr)
	}
	require.Regexp(t, `level=INFO msg=stopping cause="terminated signal received"\n`+
		`(?:.*\n)*.*level=INFO msg=stopped took=[0-9.]+m?s in_flight_finished=true\n$`, stderr.String())
}

// TestRunStopLogsADeliveryCutAtItsDeadline: a delivery still in flight
// when the stop's deadline for deliveries passes (its sender stalls in
// the body) is said in the stopped line: in_flight_finished=false.
func TestRunStopLogsADeliveryCutAtItsDeadline(t *testing.T) {
	old, oldRead := deliveriesGrace, readTimeout
	deliveriesGrace = 100 * time.Millisecond
	// The stalled body holds its handler, and the stop, until the read
	// times out: 5 s rather than 30, still far past the deliveries' grace.
	readTimeout = 5 * time.Second
	t.Cleanup(func() { deliveriesGrace, readTimeout = old, oldRead })
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret}
	var logs syncBuffer
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, &logs)

	// The delivery is in flight once the server answers 100 Continue: its
	// handler reads the body. A connection dialled first and answered
	// after one dialled later (the listener accepting in order) was not
	// proof enough: on a busy machine the stop once came with nothing in
	// flight (took=12ms in_flight_finished=true).
	stalledDelivery(t, addr, &logs)
	require.NoError(t, stop())
	require.Regexp(t, `level=INFO msg=stopping cause="context canceled"\n`+
		`(?:.*\n)*.*level=INFO msg=stopped took=[0-9.]+m?s in_flight_finished=false\n$`, logs.String())
}
