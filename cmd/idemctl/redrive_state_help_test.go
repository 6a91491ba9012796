package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedriveStateHelpNamesRedrivableStates: redrive -h offers for -state
// only the states it accepts (dead_letter, failed, ignored), not every
// inbox state, which it refuses with exit 2; list -h still offers them
// all.
func TestRedriveStateHelpNamesRedrivableStates(t *testing.T) {
	r := idemctl(t, nil, nil, "redrive", "-h")
	require.Equal(t, exitOK, r.code, r.stderr)
	help := r.stdout + r.stderr
	line := help[strings.Index(help, "  -state"):]
	line = line[:strings.Index(line, "\n  -type")]
	require.Contains(t, line, "failed, dead_letter, ignored")
	for _, s := range []string{"pending", "processing", "processed", "skipped"} {
		require.NotContains(t, line, s, "redrive -h offers -state %s, which redrive refuses", s)
	}
	r = idemctl(t, nil, nil, "list", "-h")
	require.Contains(t, r.stdout+r.stderr, "pending, processing, failed, dead_letter, processed, skipped, ignored")
}

// TestRedriveUnknownStateNamesRedrivableStates: a -state redrive does not
// know (dead-letter for dead_letter) is refused naming the states redrive
// takes, not every inbox state, most of which it refuses too.
func TestRedriveUnknownStateNamesRedrivableStates(t *testing.T) {
	r := idemctl(t, nil, nil, "redrive", "-state", "dead-letter", "-all")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Equal(t, "idemctl: redrive: -state \"dead-letter\": want one of failed, dead_letter, ignored\n", r.stderr)
	r = idemctl(t, nil, nil, "list", "-state", "dead-letter")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "want one of pending, processing, failed, dead_letter, processed, skipped, ignored")
}
