package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPruneZeroWindowsRefused: -event-ids 0 and -dead-letters 0, like
// -payloads 0, are refused (exit 2) before connecting: zero is
// Retention's "the default", which on the command line would read as
// "keep nothing".
func TestPruneZeroWindowsRefused(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"-event-ids", "-payloads", "-dead-letters"} {
		r := idemctl(t, nil, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/unused"}, "prune", flag, "0")
		require.Equal(t, exitUsage, r.code, "%s 0: %s", flag, r.stderr)
		require.Equal(t, "idemctl: prune: "+flag+" 0: leave the flag out for the default\n", r.stderr)
	}
}

// TestForgetRefusedAndNotFoundExits1: forget of a task's id (refused) and
// of an unknown id in one run exits 1, not 3: "3 when an id was not found
// (the others are forgotten)", and here one was refused.
func TestForgetRefusedAndNotFoundExits1(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "forget", "evt_unknown", "task:send-receipt:in_1")
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Equal(t, "evt_unknown: not found: the store has no claim, guard or inbox row of it\n"+
		"task:send-receipt:in_1: refused: a task, not an event; nothing of it deleted\n", r.stdout)
	s.lookup(t, "task:send-receipt:in_1")
}
