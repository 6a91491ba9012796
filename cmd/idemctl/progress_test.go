package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer for a writer on another goroutine (the
// bar's spinner).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMeter: on a terminal the bar shows the running count and its detail
// and is cleared when done; -progress lines writes a line per step; off,
// -quiet and a stderr that is not a terminal write nothing.
func TestMeter(t *testing.T) {
	t.Parallel()
	var bar syncBuffer
	m := &meter{bar: newBar(&bar, "prune", "rows", 0)}
	m.set(1000, "1000 rows deleted (event ids 0, events 1000, ...)")
	m.set(2000, "2000 rows deleted (event ids 0, events 2000, ...)")
	m.done()
	out := bar.String()
	// The spinner's frame is the one of the time since the bar started
	// (a frame each 100 ms): any of them, should a busy machine pause the
	// first drawing.
	require.Regexp(t, "\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] prune ", out)
	require.Contains(t, out, "1000 rows deleted (event ids 0, events 1000, ...)")
	require.Contains(t, out, "2000 rows deleted (event ids 0, events 2000, ...)")
	require.Contains(t, out, "rows/")
	require.True(t, strings.HasSuffix(out, "\r"), "cleared at the end: %q", out)

	for _, c := range []struct {
		g    globals
		want string
	}{
		{globals{progress: "lines"}, "idemctl: prune: 5 rows deleted\n"},
		{globals{progress: "auto"}, ""}, // a buffer is no terminal
		{globals{progress: "off"}, ""},
		{globals{progress: "lines", quiet: true}, ""},
	} {
		var stderr bytes.Buffer
		a := &app{stderr: &stderr, globals: c.g}
		m := a.meter("prune", "rows")
		m.set(5, "5 rows deleted")
		m.done()
		require.Equal(t, c.want, stderr.String(), c.g)
	}
}
