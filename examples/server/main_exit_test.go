package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mainChildEnv makes the test binary run main with its arguments instead
// of the tests (TestMain), as the command does.
const mainChildEnv = "EXAMPLES_SERVER_RUN_MAIN"

// mainCommand is the command run with args in a process of its own, with an
// empty environment but for mainChildEnv; its output goes to stderr.
func mainCommand(t *testing.T, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{mainChildEnv + "=1"}
	cmd.Stderr = stderr
	return cmd
}

// TestMainHelpExitsZero: -h prints the usage and exits 0, as the flag
// package's commands and idemctl do; it used to add "server: flag: help
// requested" and exit 1, as if the command had failed.
func TestMainHelpExitsZero(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	cmd := mainCommand(t, &stderr, "-h")
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("-h exited with status %d:\n%s", exit.ExitCode(), &stderr)
		}
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("-h did not exit")
	}
	require.Contains(t, stderr.String(), "Usage of server")
	require.NotContains(t, stderr.String(), "help requested")
}
