package idempotency_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeContentsListsEverySection: the README's Contents lists every
// section (## and ###) after it, in order, nested as the headings are,
// each linking to its heading (TestDocsLinksResolve checks the anchors),
// so that a section added, moved or renamed cannot leave it wrong.
func TestReadmeContentsListsEverySection(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, after, found := strings.Cut(string(text), "\n## Contents\n")
	require.True(t, found, "the README has no ## Contents section")
	contents, rest, _ := strings.Cut(after, "\n## ")

	item := regexp.MustCompile(`^(  )?- \[([^\]]+)\]\(#[^)]+\)$`)
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(contents), "\n") {
		m := item.FindStringSubmatch(line)
		require.NotNil(t, m, "a line of the Contents that is not a link to a section: %q", line)
		level := "## "
		if m[1] != "" {
			level = "### "
		}
		listed = append(listed, level+m[2])
	}

	var headings []string
	fenced := false
	for _, line := range strings.Split("## "+rest, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced && (strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ")) {
			headings = append(headings, line)
		}
	}
	require.Equal(t, headings, listed, "the Contents and the sections after it")
}
