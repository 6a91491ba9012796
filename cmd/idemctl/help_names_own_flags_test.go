package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/readme"
)

// TestCommandHelpNamesItsOwnFlags: every flag that a command's -h text
// names is one that the command takes (its Flags section lists it), so
// that none sends an operator to a flag the command refuses.
func TestCommandHelpNamesItsOwnFlags(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		prose, takes := commandHelp(t, c.name)
		for _, name := range readme.NamedFlags(prose) {
			assert.True(t, takes[name], "%s -h names -%s, which %s does not take", c.name, name, c.name)
		}
	}
}

// TestReadmeCLITableNamesItsFlags: the README's table of commands has a
// row for every command, and every flag a row names is one that its
// command takes.
func TestReadmeCLITableNamesItsFlags(t *testing.T) {
	t.Parallel()
	section := readme.Section(t, "../..", "Operator CLI")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)[^`]*` \\| (.*) \\|$").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = m[2]
	}
	for _, c := range commands {
		row, ok := rows[c.name]
		if !assert.True(t, ok, "the README's table has no row for %s", c.name) {
			continue
		}
		_, takes := commandHelp(t, c.name)
		for _, name := range readme.NamedFlags(row) {
			assert.True(t, takes[name], "the README's row of %s names -%s, which %s does not take", c.name, name, c.name)
		}
	}
}

// commandHelp returns the text of name -h before its Flags section, and
// the flags that section lists (h among them).
func commandHelp(t *testing.T, name string) (prose string, takes map[string]bool) {
	t.Helper()
	r := idemctl(t, nil, nil, name, "-h")
	require.Equal(t, exitOK, r.code, r.stderr)
	prose, flags, ok := strings.Cut(r.stdout, "\nFlags:\n")
	require.True(t, ok, "%s -h has a Flags section", name)
	takes = map[string]bool{"h": true}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(flags, -1) {
		takes[m[1]] = true
	}
	return prose, takes
}
