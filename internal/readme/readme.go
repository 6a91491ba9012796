// Package readme gives the tests of the module's packages the README's
// sections, and the flags a text names, so that each test that holds the
// README to the code reads it the same way.
package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Section returns the text of the README's section "## heading", up to
// the next "## " heading. dir is the module's root, relative to the
// test's package ("." for the root package, "../.." for cmd/idemctl). The
// test fails when the README has no such section.
func Section(t testing.TB, dir, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// namedFlag is a flag as a text names it: -name after the start of a
// line, white space, an opening parenthesis, a comma, a quote or a
// backquote (not a hyphen inside a word, nor a --long option of another
// tool).
var namedFlag = regexp.MustCompile("(?:^|[\\s(,\"`])-([a-z][a-z-]*[a-z])\\b")

// NamedFlags returns the names (without the hyphen) of the flags text
// names, in order, repeats included.
func NamedFlags(text string) []string {
	var names []string
	for _, m := range namedFlag.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	return names
}
