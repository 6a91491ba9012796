package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandHelpNamesItsOwnFlags: every flag that a command's -h text
// names is one that the command takes (its Flags section lists it), so
// that none sends an operator to a flag the command refuses.
func TestCommandHelpNamesItsOwnFlags(t *testing.T) {
	t.Parallel()
	named := regexp.MustCompile(`(?:^|[\s(,"])-([a-z][a-z-]*[a-z])\b`)
	listed := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`)
	for _, c := range commands {
		r := idemctl(t, nil, nil, c.name, "-h")
		require.Equal(t, exitOK, r.code, r.stderr)
		prose, flags, ok := strings.Cut(r.stdout, "\nFlags:\n")
		require.True(t, ok, "%s -h has a Flags section", c.name)
		takes := map[string]bool{"h": true}
		for _, m := range listed.FindAllStringSubmatch(flags, -1) {
			takes[m[1]] = true
		}
		for _, m := range named.FindAllStringSubmatch(prose, -1) {
			assert.True(t, takes[m[1]], "%s -h names -%s, which %s does not take", c.name, m[1], c.name)
		}
	}
}
