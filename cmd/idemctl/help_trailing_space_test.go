package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpLinesEndWithoutSpace: no line of idemctl -h, nor of a command's
// -h, ends in white space (migrate, which takes no arguments, had its
// usage line end in a space).
func TestHelpLinesEndWithoutSpace(t *testing.T) {
	t.Parallel()
	pages := [][]string{{"-h"}}
	for _, c := range commands {
		pages = append(pages, []string{c.name, "-h"})
	}
	for _, args := range pages {
		r := idemctl(t, nil, nil, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		for i, line := range strings.Split(r.stdout, "\n") {
			require.Equal(t, strings.TrimRight(line, " \t"), line, "%v, line %d", args, i+1)
		}
	}
}
