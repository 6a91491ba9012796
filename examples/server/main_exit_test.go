package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// mainChildEnv makes the test binary run main with its arguments instead
// of the tests (TestMain), as the command does; mainChildGraceEnv, when set,
// is its deliveriesGrace.
const (
	mainChildEnv      = "EXAMPLES_SERVER_RUN_MAIN"
	mainChildGraceEnv = "EXAMPLES_SERVER_DELIVERIES_GRACE"
)

// mainCommand is the command run with args in a process of its own, with an
// empty environment but for mainChildEnv and env; its output goes to stderr.
func mainCommand(t *testing.T, env []string, stderr io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append([]string{mainChildEnv + "=1"}, env...)
	cmd.Stderr = stderr
	return cmd
}

// startMain starts the command with args in a process of its own (see
// mainCommand), its output to stderr. exited receives Wait's error; a
// test that takes it puts it back for the cleanup, which kills the process
// should it still run and waits for it.
func startMain(t *testing.T, stderr io.Writer, args ...string) (cmd *exec.Cmd, exited chan error) {
	t.Helper()
	return startMainEnv(t, nil, stderr, args...)
}

// startMainEnv is startMain with env added to the command's environment.
func startMainEnv(t *testing.T, env []string, stderr io.Writer, args ...string) (cmd *exec.Cmd, exited chan error) {
	t.Helper()
	cmd = mainCommand(t, env, stderr, args...)
	require.NoError(t, cmd.Start())
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, exited
}

// mainExit runs the command with args in a process of its own (see
// mainCommand) and returns its exit status and what it wrote to stderr. A
// command that has not exited within 30 s is killed, and the test fails.
func mainExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr syncBuffer
	cmd := mainCommand(t, nil, &stderr, args...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%q did not exit within 30 s:\n%s", args, &stderr)
	}
	return 0, stderr.String()
}

// TestMainHelpExitsZero: -h prints the usage and exits 0, as the flag
// package's commands and idemctl do; it used to add "server: flag: help
// requested" and exit 1, as if the command had failed.
func TestMainHelpExitsZero(t *testing.T) {
	t.Parallel()
	code, stderr := mainExit(t, "-h")
	require.Zero(t, code, "-h exited with status %d:\n%s", code, stderr)
	require.Contains(t, stderr, "Usage of server")
	require.NotContains(t, stderr, "help requested")
}

// syncBuffer is a bytes.Buffer that a child process's output can be
// written to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// sigintIgnored is whether this binary started with SIGINT ignored (run
// as a background job of a script; go test starts it with SIGINT at its
// default), read before anything asks for the signal.
var sigintIgnored = signal.Ignored(os.Interrupt)

// TestMainSecondSignalKills: after a first SIGINT the server drains its
// deliveries for up to 15 s; a second one ends it at once, as it ends
// idemctl. It used to be swallowed: a stalled delivery held Ctrl-C for
// the whole drain. Here the drain lasts an hour, so that only the second
// signal can end the server before the test gives up: on a busy machine
// the 15 s could pass first, and the server exit 0.
func TestMainSecondSignalKills(t *testing.T) {
	t.Parallel()
	var stderr syncBuffer
	cmd, exited := startMainEnv(t, []string{mainChildGraceEnv + "=1h"}, &stderr, "-addr", "127.0.0.1:0", "-secret", secret)
	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	var addr string
	require.Eventually(t, func() bool {
		m := listening.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "the server did not start:\n%s", &stderr)

	// A delivery stalled in its body: the drain waits for it. The server
	// answers 100 Continue once the handler reads the body: only then is
	// the delivery in flight. A connection the listener had not accepted
	// yet when the signal came was dropped with it, and the server exited
	// 0 at the first signal.
	stalledDelivery(t, addr, &stderr)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.Eventually(t, func() bool { // the drain began: the listener is closed
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	deadline := time.After(30 * time.Second)
	for {
		// The SIGINT of the last round may have ended the server after its
		// 100 ms: then it is gone, and its end is in exited.
		if err := cmd.Process.Signal(os.Interrupt); !errors.Is(err, os.ErrProcessDone) {
			require.NoError(t, err)
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "killed by the signal:\n%s", &stderr)
			want := -1 // ended by the signal
			if sigintIgnored {
				want = 130 // by main, the child inheriting the ignored SIGINT
			}
			require.Equal(t, want, exit.ExitCode(), "ended by the second signal:\n%s", &stderr)
			return
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("a second SIGINT did not end the server within 30 s:\n%s", &stderr)
		}
	}
}

// stalledDelivery sends the server at addr a signed delivery whose body
// stalls after its first byte, and returns once the delivery is in
// flight: the server answers 100 Continue when the handler reads the
// body. The connection stays open until the test ends. logs is shown
// should the server not answer within 30 s.
func stalledDelivery(t *testing.T, addr string, logs fmt.Stringer) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n"+
		"Stripe-Signature: "+idempotencytest.SignatureHeader([]byte("{}"), secret, time.Now())+"\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, "no 100 Continue within 30 s:\n%s", logs)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status)
	_, err = io.WriteString(conn, "{")
	require.NoError(t, err)
}
