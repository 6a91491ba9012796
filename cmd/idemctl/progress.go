package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// meter shows the progress of a long operation on stderr: a bar (a spinner
// with a running count, since the total is not known in advance) when
// stderr is a terminal, one line per step with -progress lines, nothing
// with -quiet, -progress off, or stderr not a terminal. It is safe for
// concurrent use.
type meter struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	lines func(string)
}

// meter starts the progress of an operation; unit names what it counts.
func (a *app) meter(what, unit string) *meter {
	m := &meter{}
	switch {
	case a.quiet || a.progress == "off":
	case a.progress == "lines":
		m.lines = func(s string) { fmt.Fprintf(a.stderr, "idemctl: %s: %s\n", what, s) }
	case isTerminal(a.stderr):
		m.bar = newBar(a.stderr, what, unit, 100*time.Millisecond)
	}
	return m
}

// newBar is the bar of an operation whose total is not known in advance:
// a spinner, the detail of the count so far, its rate and the time
// elapsed, redrawn at most every throttle. It is drawn at once, so that
// the rate counts from the operation's start.
func newBar(w io.Writer, what, unit string, throttle time.Duration) *progressbar.ProgressBar {
	return progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(throttle),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	)
}

// set reports that n units are done; detail says more.
func (m *meter) set(n int, detail string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.bar != nil:
		m.bar.Describe(detail)
		_ = m.bar.Set(n)
	case m.lines != nil:
		m.lines(detail)
	}
}

// done removes the bar, before the result is written.
func (m *meter) done() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bar != nil {
		_ = m.bar.Finish()
	}
}
