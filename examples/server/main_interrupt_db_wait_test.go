package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMainStopWhileWaitingForTheDatabase: SIGINT or SIGTERM while start-up
// waits for the database (-db-wait) is a stop that was asked for, as it is
// once the server serves: the command exits 0 and blames nothing. It
// exited 1 with "server: database: context canceled".
func TestMainStopWhileWaitingForTheDatabase(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			stderr := newLogWatch(retryLogged)
			cmd, exited := startMain(t, stderr, "-addr", "127.0.0.1:0", "-secret", secret,
				"-database-url", unansweredDatabaseURL, "-db-wait", "1m")
			select {
			case <-stderr.matched:
			case err := <-exited:
				exited <- err
				t.Fatalf("exited before waiting for the database: %v\n%s", err, stderr)
			case <-time.After(30 * time.Second):
				t.Fatalf("no retry logged within 30 s:\n%s", stderr)
			}
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err := <-exited:
				exited <- err
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					t.Fatalf("exited with status %d:\n%s", exit.ExitCode(), stderr)
				}
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("still waiting for the database 10 s after %s:\n%s", sig, stderr)
			}
			require.NotContains(t, stderr.String(), "server: ", "no error")
			require.Contains(t, stderr.String(), "msg=\"stopped while waiting for the database\"")
		})
	}
}
