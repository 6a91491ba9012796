package interrupt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/interrupt"
)

// childEnv makes the test binary run child instead of the tests.
const childEnv = "INTERRUPT_TEST_CHILD"

// sigintIgnored is whether this binary started with SIGINT ignored (run
// as a background job of a script; go test starts it with SIGINT at its
// default), read before anything asks for the signal.
var sigintIgnored = signal.Ignored(os.Interrupt)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		child()
		return
	}
	os.Exit(m.Run())
}

// child is a command that stops gracefully at its first signal, and
// whose graceful stop never ends: only a second signal can end it.
func child() {
	ctx := interrupt.Context()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("stopping:", context.Cause(ctx))
	select {}
}

// TestSecondSignalEndsTheProcess: the first SIGINT or SIGTERM cancels the
// context, its cause naming the signal, and the second ends the process at
// once: by the signal, or, when the process started with SIGINT ignored (a
// background job of a script, here a shell that ignores it and execs the
// command), with exit status 130. Go gives an ignored SIGINT back ignored
// once the command no longer asks for it, so a second Ctrl-C or kill -INT
// did nothing there, and only SIGKILL ended a drain that would not end;
// and a second signal that came before the first one's goroutine stopped
// the notifications was swallowed.
func TestSecondSignalEndsTheProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sig     syscall.Signal
		ignored bool // SIGINT ignored when the process starts
	}{
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGINT ignored at start", syscall.SIGINT, true},
		{"SIGTERM, SIGINT ignored at start", syscall.SIGTERM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The exit status; -1: ended by the signal. The child inherits
			// an ignored SIGINT from this binary, run so.
			status := -1
			if tc.sig == syscall.SIGINT && (tc.ignored || sigintIgnored) {
				status = 130
			}
			cmd := exec.Command(os.Args[0])
			if tc.ignored {
				// exec keeps a signal ignored for the program it runs.
				cmd = exec.Command("/bin/sh", "-c", `trap '' INT; exec "$0"`, os.Args[0])
			}
			cmd.Env = []string{childEnv + "=1"}
			r, w, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout = w
			require.NoError(t, cmd.Start())
			require.NoError(t, w.Close())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				_ = r.Close()
			})
			lines := make(chan string)
			go func() {
				defer close(lines)
				for s := bufio.NewScanner(r); s.Scan(); {
					lines <- s.Text()
				}
			}()
			next := func() string {
				select {
				case line, ok := <-lines:
					require.True(t, ok, "the child's output ended")
					return line
				case <-time.After(30 * time.Second):
					t.Fatal("the child wrote nothing for 30 s")
				}
				return ""
			}
			require.Equal(t, "ready", next())
			require.NoError(t, cmd.Process.Signal(tc.sig))
			require.Equal(t, "stopping: "+tc.sig.String()+" signal received", next(), "the first signal cancels the context, naming it")
			require.NoError(t, cmd.Process.Signal(tc.sig))
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "the second signal ends the process: %v", err)
				require.Equal(t, status, exit.ExitCode(), "%v", err)
				if status == -1 {
					ws, ok := exit.Sys().(syscall.WaitStatus)
					require.True(t, ok && ws.Signaled() && ws.Signal() == tc.sig, "ended by the signal: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the second signal did not end the process within 30 s")
			}
		})
	}
}
