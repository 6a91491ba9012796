// Package interrupt gives the commands (examples/server, idemctl) the
// context of their run: the first SIGINT or SIGTERM cancels it, and the
// command stops gracefully (a server drains its deliveries, which can take
// 15 s and more); a second one ends the process at once.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// signals are the signals that stop a command.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Context returns a context that the first SIGINT or SIGTERM cancels; the
// second ends the process at once (see exit).
func Context() context.Context {
	// Read before Notify takes the signals over: a process started with
	// SIGINT ignored (a background job of a script) has it ignored again
	// once they are reset, Go giving back what it found.
	ignored := make(map[os.Signal]bool, len(signals))
	for _, sig := range signals {
		ignored[sig] = signal.Ignored(sig)
	}
	got := make(chan os.Signal, 2)
	signal.Notify(got, signals...)
	// Its cause names the signal ("interrupt signal received"). Never
	// stopped: the second signal ends the process.
	ctx, _ := signal.NotifyContext(context.Background(), signals...)
	go func() {
		<-got
		sig := <-got
		exit(sig, ignored[sig])
	}()
	return ctx
}

// exitWait bounds the wait for the signal exit sends the process to end
// it: Go's handler ends it by the signal, on a thread of its own, within
// moments.
const exitWait = 10 * time.Second

// exit ends the process on sig: by sig's default action, as a shell
// expects of a process that a signal ended (sig is sent again, not
// notified any more), or, where the process started with sig ignored,
// with exit status 128 + sig.
func exit(sig os.Signal, ignoredAtStart bool) {
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	if !ignoredAtStart {
		signal.Reset(signals...)
		if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(sig) == nil {
			time.Sleep(exitWait)
		}
	}
	os.Exit(code)
}
