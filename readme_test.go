package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/readme"
	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

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
	walkGoFiles(t, true, func(src []byte) {
		for _, m := range decl.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
	})
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

// TestReadmeQuotesTheDefaults: the defaults the README's sections on the
// inbox, tasks, current state, recovery, PostgreSQL, retention and the
// runbook quote are the code's constants, so that a default changed
// without the README fails here.
func TestReadmeQuotesTheDefaults(t *testing.T) {
	t.Parallel()
	text := readmeText(t)
	whole := func(d, unit time.Duration) int {
		t.Helper()
		require.Zero(t, d%unit, "%s is no whole number of %s", d, unit)
		return int(d / unit)
	}
	const day = 24 * time.Hour
	lease := whole(idempotency.DefaultLease, time.Minute)
	timeout := whole(idempotency.DefaultInboxTimeout, time.Second)
	eventIDs := whole(idempotency.DefaultEventIDRetention, day)
	deadLetters := whole(idempotency.DefaultDeadLetterRetention, day)
	payloads := whole(idempotency.DefaultPayloadRetention, day)
	batch := idempotency.DefaultPruneBatch
	require.True(t, batch >= 1000 && batch < 1000000, "DefaultPruneBatch %d is not written n,nnn", batch)
	require.Equal(t, time.Hour, idempotency.DefaultRetryUnhandledFor, "the README says RetryUnhandledFor defaults to an hour")
	for _, quoted := range []string{
		// Inbox mode.
		fmt.Sprintf("`MaxAttempts` (%d)", idempotency.DefaultMaxAttempts),
		fmt.Sprintf("(`Lease`, %d minute; it must exceed the attempt `Timeout`, %d s, by a second at least)", lease, timeout),
		fmt.Sprintf("about %d minutes after its first attempt with the defaults", idempotency.DefaultMaxAttempts*lease),
		fmt.Sprintf("`MaxIngestLag` (%d s)", whole(idempotency.DefaultMaxIngestLag, time.Second)),
		fmt.Sprintf("`PollInterval` (%d s)", whole(idempotency.DefaultPollInterval, time.Second)),
		fmt.Sprintf("`pool_max_conns=%d` in the URL for the default %d workers", idempotency.DefaultWorkers+1, idempotency.DefaultWorkers),
		fmt.Sprintf("RetryUnhandledFor, %s, after it was received", idempotency.DefaultRetryUnhandledFor),
		// Tasks.
		fmt.Sprintf("`pool_max_conns=%d` for the default %d workers", idempotency.DefaultWorkers+1, idempotency.DefaultWorkers),
		fmt.Sprintf("`InboxConfig.Timeout` (%d s, the func's `ctx`)", timeout),
		fmt.Sprintf("`Retention.Payloads` (%d days)", payloads),
		// Current state and recovery.
		fmt.Sprintf("`FetchTimeout` (%d s)", whole(idempotency.FetchTimeout, time.Second)),
		fmt.Sprintf("`RecoveryOverlap` (%d minutes)", whole(idempotency.RecoveryOverlap, time.Minute)),
		fmt.Sprintf("paced at %d/s by default (`RequestsPerSecond`)", idempotency.DefaultRecoverRate),
		fmt.Sprintf("at most %d days (`time.Now().Add(-idempotency.RecoveryWindow)`", whole(idempotency.RecoveryWindow, day)),
		// PostgreSQL and retention.
		fmt.Sprintf("`PgxConfig.RecentClaims`, %d, each for `PgxConfig.RecentClaimsTTL`, %d minute",
			idempotency.DefaultRecentClaims, whole(idempotency.DefaultRecentClaimsTTL, time.Minute)),
		fmt.Sprintf("in batches of %d,%03d rows", batch/1000, batch%1000),
		fmt.Sprintf("| claimed event ids (the ledger) | %d days, at least;", eventIDs),
		fmt.Sprintf("| finished inbox events, with their payloads | %d days |", payloads),
		fmt.Sprintf("| dead letters (events) | %d days, at least `Payloads` |", deadLetters),
		fmt.Sprintf("the ids' and the dead letters' windows together (%d days)", eventIDs+deadLetters),
		// The runbook.
		fmt.Sprintf("at `InboxConfig.Timeout`, %d s)", timeout),
		fmt.Sprintf("about %d minutes with the defaults (a `Lease` each)", idempotency.DefaultMaxAttempts*lease),
		fmt.Sprintf("(`Retention.EventIDs`, %d days)", eventIDs),
	} {
		assert.True(t, strings.Contains(text, quoted), "the README does not quote %s", quoted)
	}
}

// TestReadmeBackoffTableIsDefaultBackoffs: the README's table of retries
// is DefaultBackoff's schedule, n⁴ seconds after failed attempt n, up to
// the default MaxAttempts, each time within the rounding of its last
// unit; and so are the figures said around it.
func TestReadmeBackoffTableIsDefaultBackoffs(t *testing.T) {
	t.Parallel()
	wait := func(n int) time.Duration { return time.Duration(n*n*n*n) * time.Second }
	start := func(n int) (d time.Duration) { // of attempt n, after the first
		for k := 1; k < n; k++ {
			d += wait(k)
		}
		return d
	}
	for n := 1; n <= idempotency.DefaultMaxAttempts; n++ {
		got := idempotency.DefaultBackoff(n)
		require.True(t, got >= wait(n)*9/10 && got <= wait(n)*11/10, "DefaultBackoff(%d) = %s, not n⁴ seconds ±10%%", n, got)
	}

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "\n| attempt |")
	require.True(t, ok, "the README has no table of retries")
	lines := strings.SplitN(table, "\n", 5)
	cells := func(line, label string) []string {
		t.Helper()
		rest, ok := strings.CutPrefix(line, label)
		require.True(t, ok, "the table's row %q", label)
		row := strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "|"), "|")
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
		return row
	}
	attempts := cells(lines[0], "")
	starts := cells(lines[2], "| starts after the first by |")
	waits := cells(lines[3], "| if it fails, the next waits |")
	require.Len(t, starts, len(attempts))
	require.Len(t, waits, len(attempts))
	require.Equal(t, strconv.Itoa(idempotency.DefaultMaxAttempts), attempts[len(attempts)-1], "the table ends at the default MaxAttempts")
	require.Equal(t, "dead letter", waits[len(waits)-1])
	for i, a := range attempts {
		n, err := strconv.Atoi(a)
		require.NoError(t, err)
		requireRounded(t, start(n), starts[i], fmt.Sprintf("the start of attempt %d", n))
		if n < idempotency.DefaultMaxAttempts {
			requireRounded(t, wait(n), waits[i], fmt.Sprintf("the wait after attempt %d", n))
		}
	}

	text := readmeText(t)
	last := idempotency.DefaultMaxAttempts
	span := fmt.Sprintf("The %d attempts span %.1f days", last, start(last).Hours()/24)
	assert.True(t, strings.Contains(text, span), "the README does not say %s", span)
	inAnHour := 1
	for start(inAnHour+1) <= time.Hour {
		inAnHour++
	}
	hour := fmt.Sprintf("an event failing for an hour has had %d attempts, and waits %d minutes for the %dth",
		inAnHour, int(wait(inAnHour).Round(time.Minute)/time.Minute), inAnHour+1)
	assert.True(t, strings.Contains(text, hour), "the README does not say %s", hour)
}

// requireRounded fails the test unless cell ("0", "81 s", "4 h 16 min",
// "1 d 12 h"), the README's figure for what, is d rounded to the last
// unit it writes.
func requireRounded(t *testing.T, d time.Duration, cell, what string) {
	t.Helper()
	units := map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	fields := strings.Fields(cell)
	if len(fields) == 1 && fields[0] == "0" {
		require.Zero(t, d, "%s: the README says 0", what)
		return
	}
	require.True(t, len(fields) > 0 && len(fields)%2 == 0, "%s: %q is no duration", what, cell)
	var got, unit time.Duration
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.Atoi(fields[i])
		require.NoError(t, err, "%q", cell)
		u, ok := units[fields[i+1]]
		require.True(t, ok, "%q: unit %q", cell, fields[i+1])
		got, unit = got+time.Duration(v)*u, u
	}
	require.LessOrEqual(t, (got - d).Abs(), unit/2, "%s: the README says %q, not %s rounded", what, cell, d)
}

// TestReadmeQuotesTheCodesTexts: the log lines, errors and idemctl show
// lines the README's sections on the inbox, current state, PostgreSQL and
// the runbook quote, for an operator to search for, are the code's (a
// quote's words between its values): in its string literals (codeTexts),
// not in a comment that may still quote what the code said before.
func TestReadmeQuotesTheCodesTexts(t *testing.T) {
	t.Parallel()
	var code []string
	walkGoFiles(t, false, func(src []byte) { code = append(code, codeTexts(t, src)...) })
	says := func(quoted string) bool {
		return slices.ContainsFunc(code, func(s string) bool { return strings.Contains(s, quoted) })
	}
	text := readmeText(t)
	for _, quoted := range []string{
		"idempotency inbox: attempting, alone, what a worker held when its lease expired",
		"the event is no longer held at this attempt",
		"cannot take due events",
		"no notification reached the listen connection",
		"recorded ignored: not applied within RetryUnhandledFor",
		"idempotency task: attempt",
		"is another object's type",
		"cannot decode a JSON",
		"the object's FetchFunc returned ErrObjectNotFound (Retrieve's answer to a 404 resource_missing)",
		"the API key is of the other mode",
		"not an answer of the Stripe API",
		"the platform has no access to the connected account",
		"run PgxStore.Migrate on it first",
		"or set PgxConfig.Schema to the schema the service's other processes use",
		"and is one or two letters from one it knows: check its spelling",
		"lease expired after attempt",
		"its worker died, hung or lost its connection, or the clocks of the replicas disagree",
		"due at its next attempt",
		"a worker holds it under a lease until",
		"its worker's lease expired at",
		"the next lease retries it once nothing holds it back, or dead-letters it after its last attempt without waiting",
	} {
		assert.True(t, strings.Contains(text, quoted), "the README no longer quotes %q: take it out of this list", quoted)
		assert.True(t, says(quoted), "the README quotes %q, which the code no longer says", quoted)
	}
}

// codeTexts returns the texts a Go file's code says: its string
// literals, those written one after the other with + joined, each with
// its runs of white space made one space, as readmeText does; not its
// comments.
func codeTexts(t *testing.T, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	text := func(e ast.Expr) (string, bool) {
		lit, ok := ast.Unparen(e).(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	var out []string
	say := func(s string) { out = append(out, strings.Join(strings.Fields(s), " ")) }
	var visit func(ast.Node) bool
	visit = func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok {
			if s, ok := text(e); ok {
				say(s)
				return false
			}
		}
		sum, ok := n.(*ast.BinaryExpr)
		if !ok || sum.Op != token.ADD {
			return true
		}
		// The operands of a sum, in order: the literals one after the
		// other make one text.
		var run []string
		var walk func(ast.Expr)
		walk = func(e ast.Expr) {
			if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.ADD {
				walk(b.X)
				walk(b.Y)
				return
			}
			if s, ok := text(e); ok {
				run = append(run, s)
				return
			}
			if len(run) > 0 {
				say(strings.Join(run, ""))
				run = nil
			}
			ast.Inspect(e, visit)
		}
		walk(sum)
		if len(run) > 0 {
			say(strings.Join(run, ""))
		}
		return false
	}
	ast.Inspect(f, visit)
	return out
}

// TestCodeTextsAreStringLiterals: what the code says is its string
// literals, those written one after the other with + joined, each with
// its white space as the README's (a help text's lines joined), and not
// its comments, which may quote what it said before.
func TestCodeTextsAreStringLiterals(t *testing.T) {
	t.Parallel()
	src := "package p\n\n// Was \"lease lost after attempt N\".\nvar format = \"lease expired \" +\n\t\"after attempt %s: \" + cause + \"; retried\"\n\nconst help = `Counts the\n  rows`\n"
	require.Equal(t, []string{"lease expired after attempt %s:", "; retried", "Counts the rows"}, codeTexts(t, []byte(src)))
}

// walkGoFiles calls fn with each Go file of the module, test files or the
// others, outside the .git and .ci directories.
func walkGoFiles(t *testing.T, tests bool, fn func(src []byte)) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git, .ci
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") != tests {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(src)
		return nil
	}))
}
