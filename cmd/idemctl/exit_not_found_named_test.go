package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitNotFoundNamesEveryCommand: every command line that exits 3 for
// an id the store does not have is named where the exit codes are
// written: -h, the package doc and the README, so that a script that
// reads exit 3 of one knows it for what it is.
func TestExitNotFoundNamesEveryCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	helpLine := regexp.MustCompile(`(?m)^\s*3 +not found: (.*)$`)
	help := helpLine.FindStringSubmatch(exitCodesHelp)
	require.NotNil(t, help, "-h has an exit 3 line")
	pkg := helpLine.FindStringSubmatch(strings.ReplaceAll(string(doc), "//\t", ""))
	require.NotNil(t, pkg, "doc.go has an exit 3 line")
	readmeCodes := regexp.MustCompile(`3 not found \(([^)]*)\)`).FindStringSubmatch(oneLine(string(readme)))
	require.NotNil(t, readmeCodes, "the README has an exit 3 sentence")

	s := newService(t, nil)
	for name, args := range map[string][]string{
		"show":        {"show", "evt_none"},
		"forget":      {"forget", "evt_none"},
		"redrive -id": {"redrive", "-id", "evt_none"},
		"list -after": {"list", "-after", "evt_none"},
	} {
		r := idemctl(t, s.db, nil, args...)
		require.Equal(t, exitNotFound, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, help[1], name, "-h's exit 3 line")
		require.Contains(t, pkg[1], name, "doc.go's exit 3 line")
		require.Contains(t, readmeCodes[1], "`"+name+"`", "the README's exit 3")
	}
}
