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
// each linking to its own heading's anchor, so that a section added,
// moved or renamed cannot leave it wrong. (An entry linking another
// section's anchor passed: TestDocsLinksResolve asks only that an anchor
// be some heading's.)
func TestReadmeContentsListsEverySection(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, after, found := strings.Cut(string(text), "\n## Contents\n")
	require.True(t, found, "the README has no ## Contents section")
	contents, _, _ := strings.Cut(after, "\n## ")

	item := regexp.MustCompile(`^(  )?- \[([^\]]+)\]\(#([^)]+)\)$`)
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(contents), "\n") {
		m := item.FindStringSubmatch(line)
		require.NotNil(t, m, "a line of the Contents that is not a link to a section: %q", line)
		level := "## "
		if m[1] != "" {
			level = "### "
		}
		listed = append(listed, level+m[2]+" (#"+m[3]+")")
	}

	var headings []string
	afterContents := false
	for _, h := range markdownHeadings(string(text)) {
		if h.line == "## Contents" {
			afterContents = true
			continue
		}
		if afterContents && (strings.HasPrefix(h.line, "## ") || strings.HasPrefix(h.line, "### ")) {
			headings = append(headings, h.line+" (#"+h.anchor+")")
		}
	}
	require.Equal(t, headings, listed, "the Contents and the sections after it, with their anchors")
}
