package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShowInvalidIDIsUsage: an id no store can hold (empty, as an unset
// shell variable gives, a NUL byte, not UTF-8, too long) is a bad
// argument, exit 2, not an id the store does not have (exit 3).
func TestShowInvalidIDIsUsage(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	for _, bad := range []string{"", "evt_\x00", "evt_\xff", "evt_" + strings.Repeat("x", 2000)} {
		r := idemctl(t, s.db, nil, "show", bad)
		require.Equal(t, exitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "idemctl: show: ")
		require.Empty(t, r.stdout)
	}
}
