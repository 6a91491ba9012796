package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/readme"
	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

// TestReadmeProgramBuilds keeps the README's first program true to the API:
// it is extracted and vetted as a package of this module.
func TestReadmeProgramBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	file := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(file, []byte(readmeProgram(t)), 0o600))
	out, err := exec.Command("go", "vet", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// readmeProgram returns the README's first program, the source of its
// main.go.
func readmeProgram(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```go\npackage main\n")
	require.True(t, ok, "the README starts with a complete program")
	program, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	return "package main\n" + program
}

// TestReadmeQuotesAStripeErrorAsLogged: the README quotes the text a
// handler's stripe-go error reads by in the log line, a declined card's,
// as the Handler writes it (the request id aside).
func TestReadmeQuotesAStripeErrorAsLogged(t *testing.T) {
	t.Parallel()
	_, logs := failingHandler(t, func(ctx context.Context) error { return chargeDeclined(ctx, false) })
	var logged string
	for line := range strings.Lines(logs) {
		var rec struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Error != "" {
			logged = rec.Error
		}
	}
	text, ok := strings.CutPrefix(logged, "charging the customer: ")
	require.True(t, ok, "the log line quotes the handler's error: %s", logged)
	text = strings.ReplaceAll(text, "req_declined_1", "req_...")
	require.True(t, strings.Contains(readmeText(t), "`"+text+"`"),
		"the README does not quote the text the log line has: `%s`", text)
}

// readmeText returns the README with its lines joined by single spaces,
// as a wrapped sentence reads.
func readmeText(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(readme)), " ")
}

// TestReadmeFirstScreenIsCI: the README's test command is the one .ci/run
// runs, and the Go it asks for, and the stripe-mock it installs, are the
// ones go.mod and the contract tests ask for.
func TestReadmeFirstScreenIsCI(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	command := regexp.MustCompile(`(?m)^go test [^#\n]*?\s*(?:#|$)`)
	ciCommand := command.FindString(string(ci))
	require.NotEmpty(t, ciCommand, ".ci/run runs no go test command")
	readmeCommand := command.FindString(string(readme))
	require.Equal(t, strings.TrimSpace(strings.TrimSuffix(ciCommand, "#")), strings.TrimSpace(strings.TrimSuffix(readmeCommand, "#")),
		"the README's first test command is not .ci/run's")

	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	require.NotNil(t, goLine)
	text := readmeText(t)
	require.True(t, strings.Contains(text, "asks for "+string(goLine[1])+" or later"), "the README does not say that go.mod asks for Go %s", goLine[1])
	require.True(t, strings.Contains(text, "`go install github.com/stripe/stripe-mock@"+stripemock.Version+"`"),
		"the README does not install stripe-mock %s", stripemock.Version)
}

// TestReadmeAnswersAreTheHandlers: the defaults the Answers table quotes
// are Config's, and the bodies the README quotes are the ones the
// Handler answers, every one of them.
func TestReadmeAnswersAreTheHandlers(t *testing.T) {
	t.Parallel()
	text := readmeText(t)
	require.Zero(t, idempotency.DefaultMaxBodyBytes%(1<<20), "DefaultMaxBodyBytes is no whole number of MiB")
	for _, quoted := range []string{
		fmt.Sprintf("`MaxBodyBytes` (%d MiB)", idempotency.DefaultMaxBodyBytes>>20),
		fmt.Sprintf("`Tolerance` (%d min)", int(idempotency.DefaultTolerance/time.Minute)),
	} {
		require.True(t, strings.Contains(text, quoted), "the README's Answers table does not quote %s", quoted)
	}

	body := regexp.MustCompile("`(\\{\"(?:error|outcome)\":\"[a-z_]+\"\\})`")
	bodies := func(text string) map[string]bool {
		found := map[string]bool{}
		for _, m := range body.FindAllStringSubmatch(text, -1) {
			found[m[1]] = true
		}
		return found
	}
	answered := map[string]bool{}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		maps.Copy(answered, bodies(string(src)))
	}
	require.NotEmpty(t, answered)
	require.Equal(t, slices.Sorted(maps.Keys(answered)), slices.Sorted(maps.Keys(bodies(text))),
		"the bodies the README quotes are not the Handler's")
}

// TestDocsNameExistingTests: every Test, Benchmark or Example function the
// README or the CHANGELOG cites as the proof of a behaviour exists in the
// module, so that a reader who looks for it finds it.
func TestDocsNameExistingTests(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example)[A-Za-z0-9_]*)\(`)
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git, .ci
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	}))
	cited := regexp.MustCompile("`((?:Test|Benchmark)[A-Z][A-Za-z0-9_]*)`")
	for _, doc := range []string{"README.md", "CHANGELOG.md"} {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range cited.FindAllSubmatch(text, -1) {
			assert.True(t, defined[string(m[1])], "%s cites %s, which no test file defines", doc, m[1])
		}
	}
}

// TestReadmeConfigurationIsConfig: the README's Configuration table has a
// row for every field of Config, in its order, and the defaults it quotes
// are Config's.
func TestReadmeConfigurationIsConfig(t *testing.T) {
	t.Parallel()
	section := readme.Section(t, ".", "Configuration")
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| ([^|]*) \\|")
	var rows []string
	defaults := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
		defaults[m[1]] = strings.TrimSpace(m[2])
	}
	var fields []string
	for f := range reflect.TypeFor[idempotency.Config]().Fields() {
		if f.IsExported() {
			fields = append(fields, f.Name)
		}
	}
	require.Equal(t, fields, rows, "the Configuration table's rows are not Config's fields")
	require.Zero(t, idempotency.DefaultTolerance%time.Minute)
	require.Zero(t, idempotency.DefaultTimeout%time.Second)
	require.Equal(t, fmt.Sprintf("%d minutes", int(idempotency.DefaultTolerance/time.Minute)), defaults["Tolerance"])
	require.Equal(t, fmt.Sprintf("%d MiB", idempotency.DefaultMaxBodyBytes>>20), defaults["MaxBodyBytes"])
	require.Equal(t, fmt.Sprintf("%d s", int(idempotency.DefaultTimeout/time.Second)), defaults["Timeout"])
}
