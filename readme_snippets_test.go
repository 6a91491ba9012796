package idempotency_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeSnippetsBuild keeps every Go block of the README true to the
// API: each is vetted, as a user who copies it builds it, in a package of
// its own inside this module, all of them in one go vet. A block that
// starts with package is a file as it is; another's top-level
// declarations (type, func, var, const) are a file's, and its statements
// are a func's body, beside a short preamble (readmeSnippetContexts) that
// declares what the text around the block says the reader has. A name the
// block declares and does not use fails it, as it fails a user's build.
// A file that declares a Test, Benchmark, Example or Fuzz func is a
// _test.go file. The errors point at the README's lines, and name the
// block and the heading above it.
func TestReadmeSnippetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	path, err := filepath.Abs("README.md")
	require.NoError(t, err)
	blocks, err := vetReadmeSnippets(t, path)
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[string]bool{}
	for _, block := range blocks {
		inReadme[block.name] = true
	}
	for name := range readmeSnippetContexts {
		_, skipped := readmeSnippetsSkipped[name]
		require.True(t, inReadme[name] && !skipped, "readmeSnippetContexts has %s, which is no Go block of the README's (or a skipped one)", name)
	}
	for name := range readmeSnippetsSkipped {
		require.True(t, inReadme[name], "readmeSnippetsSkipped has %s, which is no Go block of the README's", name)
	}
}

// vetReadmeSnippets vets the Go blocks of the README at path but those
// readmeSnippetsSkipped names, as TestReadmeSnippetsBuild says, and
// returns the README's blocks, and go vet's failure, its output under
// the blocks' lines and names (vetByBlock), or nil.
func vetReadmeSnippets(t *testing.T, path string) ([]readmeGoBlock, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blocks := readmeGoBlocks(string(b))
	require.NotEmpty(t, blocks, "the README's Go blocks")

	dir, err := os.MkdirTemp(".", ".readme-snippets-") // in the module: its go.mod and go.sum; go vet ./... skips it
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	var pkgs []string
	byDir := map[string]readmeGoBlock{}
	for _, block := range blocks {
		if _, ok := readmeSnippetsSkipped[block.name]; ok {
			continue
		}
		files, err := snippetFiles(path, block, readmeSnippetContexts[block.name])
		require.NoError(t, err, "README.md:%d, %s: the block does not parse as Go", block.line, block.name)
		pkg := filepath.Join(dir, "line"+strconv.Itoa(block.line))
		require.NoError(t, os.Mkdir(pkg, 0o700))
		for name, src := range files {
			require.NoError(t, os.WriteFile(filepath.Join(pkg, name), []byte(src), 0o600))
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(pkg))
		byDir[filepath.Base(pkg)] = block
	}
	out, err := exec.Command("go", append([]string{"vet"}, pkgs...)...).CombinedOutput()
	if err != nil {
		return blocks, fmt.Errorf("go vet: %w: README.md's Go blocks that do not build:\n%s", err, vetByBlock(string(out), blocks, byDir))
	}
	return blocks, nil
}

// readmeGoBlock is a ```go block of the README.
type readmeGoBlock struct {
	line int    // the README's line of its first line of Go, after the fence
	name string // the heading above it and its place under it: "## Inbox mode: ... #2"
	src  string
}

// readmeGoBlocks returns the README's ```go blocks, in order.
func readmeGoBlocks(readme string) []readmeGoBlock {
	var blocks []readmeGoBlock
	var heading, fence string
	var src strings.Builder
	n := map[string]int{} // Go blocks under each heading
	start := 0
	for i, line := range strings.Split(readme, "\n") {
		switch {
		case fence == "" && strings.HasPrefix(line, "```"):
			fence = line
			start = i + 2
			src.Reset()
		case fence != "" && line == "```":
			if fence == "```go" {
				n[heading]++
				blocks = append(blocks, readmeGoBlock{line: start, name: heading + " #" + strconv.Itoa(n[heading]), src: src.String()})
			}
			fence = ""
		case fence != "":
			src.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			heading = line
		}
	}
	return blocks
}

// snippetFiles returns the files of a block's package by their names.
// The block's lines keep their README line numbers through //line
// comments: its declarations are written where they stand, and its
// statements, in the func's body, with the other lines blank.
func snippetFiles(readme string, block readmeGoBlock, ctx readmeSnippetContext) (map[string]string, error) {
	at := func(line int) string { return fmt.Sprintf("//line %s:%d\n", readme, line) }
	var src string
	whole := strings.HasPrefix(block.src, "package ")
	if whole {
		src = at(block.line) + block.src
	} else {
		decls, stmts := snippetParts(block.src)
		fn := ctx.fn
		if fn == "" {
			fn = "func _() {\n%s}\n"
		}
		src = "package snippet\n\n" + at(block.line) + decls
		if strings.TrimSpace(stmts) != "" {
			src += fmt.Sprintf(fn, at(block.line)+stmts)
		}
	}
	file, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	name := "snippet.go"
	if isTestFile(file) {
		name = "snippet_test.go"
	}
	if !whole {
		src = withImports(file, src)
	}
	files := map[string]string{name: src}
	if ctx.decls != "" {
		preamble := "package snippet\n\n" + ctx.decls
		file, err := parser.ParseFile(token.NewFileSet(), "", preamble, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("its context: %w", err)
		}
		files["context.go"] = withImports(file, preamble)
	}
	return files, nil
}

// testFunc is the name of a func that go test runs.
var testFunc = regexp.MustCompile(`^(Test|Benchmark|Example|Fuzz)([A-Z_]|$)`)

// isTestFile reports whether file declares a func that go test runs.
func isTestFile(file *ast.File) bool {
	for _, d := range file.Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil && testFunc.MatchString(f.Name.Name) {
			return true
		}
	}
	return false
}

// snippetImports are the packages the README's blocks use without
// importing them (all but its first program), by the names they use
// them by.
var snippetImports = map[string]string{
	"context":         "context",
	"errors":          "errors",
	"fmt":             "fmt",
	"log":             "log",
	"slog":            "log/slog",
	"http":            "net/http",
	"os":              "os",
	"subtle":          "crypto/subtle",
	"testing":         "testing",
	"time":            "time",
	"pgx":             "github.com/jackc/pgx/v5",
	"pgxpool":         "github.com/jackc/pgx/v5/pgxpool",
	"pgconn":          "github.com/jackc/pgx/v5/pgconn",
	"prometheus":      "github.com/prometheus/client_golang/prometheus",
	"promhttp":        "github.com/prometheus/client_golang/prometheus/promhttp",
	"require":         "github.com/stretchr/testify/require",
	"stripe":          "github.com/stripe/stripe-go/v82",
	"otelprometheus":  "go.opentelemetry.io/otel/exporters/prometheus",
	"attribute":       "go.opentelemetry.io/otel/attribute",
	"sdkmetric":       "go.opentelemetry.io/otel/sdk/metric",
	"idempotency":     "github.com/seed-a84bb619/idempotency",
	"idempotencytest": "github.com/seed-a84bb619/idempotency/idempotencytest",
	"idempotencyotel": "github.com/seed-a84bb619/idempotency/otel",
	"dashboard":       "github.com/seed-a84bb619/idempotency/dashboard",
}

// withImports returns src, a file without imports, with an import of
// each package of snippetImports that it uses by its name, after its
// package clause.
func withImports(file *ast.File, src string) string {
	used := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && snippetImports[x.Name] != "" {
				used[x.Name] = true
			}
		}
		return true
	})
	var imports strings.Builder
	for _, name := range slices.Sorted(maps.Keys(used)) {
		fmt.Fprintf(&imports, "import %s %q\n", name, snippetImports[name])
	}
	clause, rest, _ := strings.Cut(src, "\n")
	return clause + "\n\n" + imports.String() + rest
}

// vetByBlock returns go vet's output with each line that names a
// block, by a README line or by its package, under the block's line and
// name, and the others after them.
func vetByBlock(out string, blocks []readmeGoBlock, byDir map[string]readmeGoBlock) string {
	inReadme := regexp.MustCompile(`README\.md:(\d+)`)
	inPkg := regexp.MustCompile(`\.readme-snippets-[^/]*/(line\d+)`)
	var order []readmeGoBlock
	lines := map[int][]string{}
	var other []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		block, found := readmeGoBlock{}, false
		if m := inReadme.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			for _, b := range blocks {
				if b.line <= n {
					block, found = b, true
				}
			}
		} else if m := inPkg.FindStringSubmatch(line); m != nil {
			block, found = byDir[m[1]]
		}
		if !found {
			other = append(other, line)
			continue
		}
		if strings.HasPrefix(line, "# ") {
			continue // the package's header: the block's name says it
		}
		if _, ok := lines[block.line]; !ok {
			order = append(order, block)
		}
		lines[block.line] = append(lines[block.line], line)
	}
	slices.SortFunc(order, func(a, b readmeGoBlock) int { return a.line - b.line })
	var s strings.Builder
	for _, b := range order {
		preamble := "no preamble"
		if _, ok := readmeSnippetContexts[b.name]; ok {
			preamble = "readmeSnippetContexts' preamble"
		}
		fmt.Fprintf(&s, "README.md:%d, the block %s (%s):\n", b.line, b.name, preamble)
		for _, l := range lines[b.line] {
			fmt.Fprintf(&s, "\t%s\n", l)
		}
	}
	for _, l := range other {
		fmt.Fprintf(&s, "%s\n", l)
	}
	return s.String()
}

// readmeSnippetContext is what the README's text says the reader has
// around a block.
type readmeSnippetContext struct {
	decls string // top-level declarations, a file of the block's package
	fn    string // the func the block's statements are the body of, its %s; "func _() {\n%s}\n" if empty
}

// The funcs of blocks whose statements are a test's, and a func's that
// returns an error.
const (
	inATest        = "func _(t *testing.T) {\n%s}\n"
	returnsAnError = "func _() error {\n%s\treturn nil\n}\n"
)

// readmeSnippetsSkipped are the README's Go blocks that are not built, by
// name, with the reason.
var readmeSnippetsSkipped = map[string]string{
	"### Already running River? #1": "River's: this module does not depend on River; TestReadmeRiverSnippet checks what it can",
}

// readmeSnippetContexts are the preambles of the README's Go blocks, by
// name: what the text around each says the reader has. ctx, store, hs
// and check are the first program's (in a test, hs are the handlers
// under test and ctx the test's); the others are the service's, or named
// where the block stands.
var readmeSnippetContexts = map[string]readmeSnippetContext{
	"### Two Stripe accounts in one service #1": {decls: `
var (ctx = context.Background(); pool *pgxpool.Pool; mux = http.NewServeMux())
func check(error) {}
func handlers(client *stripe.Client, acct string) *idempotency.Handlers { return idempotency.NewHandlers() } // the service's registrations, for one account
`},
	"### Behind a router, middleware or a proxy #1": {decls: `
var h *idempotency.Handler // NewHandler's or Inbox.Handler's
var mux = http.NewServeMux()
`},
	"## Inbox mode: answer at once, apply in workers #1": {decls: `
var (ctx = context.Background(); store *idempotency.PgxStore; hs = idempotency.NewHandlers())
func check(error) {}
var (secrets []string; mux = http.NewServeMux())
`},
	"## Inbox mode: answer at once, apply in workers #2": {decls: `
var ctx = context.Background()
var inbox *idempotency.Inbox // the section's first block's
var logger *slog.Logger
`},
	"## Inbox mode: answer at once, apply in workers #3": {decls: `
var (store *idempotency.PgxStore; hs = idempotency.NewHandlers())
var secrets []string
`},
	"## Inbox mode: answer at once, apply in workers #4": {decls: `
var (ctx = context.Background(); store *idempotency.PgxStore; hs = idempotency.NewHandlers())
`},
	"## Inbox mode: answer at once, apply in workers #5": {decls: `
var (ctx = context.Background(); hs = idempotency.NewHandlers())
var payload []byte // an event's JSON
`},
	"## Tasks: side effects that must happen once #1": {decls: `
var hs = idempotency.NewHandlers()
var mailer interface {
	SendReceipt(ctx context.Context, account string, amount int64, key string) error
}
`},
	"## Tasks: side effects that must happen once #2": {decls: `
var (ctx = context.Background(); store *idempotency.PgxStore; hs = idempotency.NewHandlers())
func check(error) {}
var secrets []string
`},
	"## Tasks: side effects that must happen once #3": {fn: inATest, decls: `
var (ctx = context.Background(); hs = idempotency.NewHandlers())
var payload []byte // an invoice.paid of in_123
type Receipt struct{ Account string; Amount int64 } // the section's first block's
var sendReceipt *idempotency.Task[Receipt]
`},
	"## Writing handlers #1": {decls: `
var hs = idempotency.NewHandlers()
var cache interface{ Invalidate(account string) }
`},
	"## Writing handlers #2": {decls: `
var hs = idempotency.NewHandlers()
type Welcome struct{ Email string } // the task's args
var mailer interface{ Send(ctx context.Context, email, key string) error }
`},
	"## Writing handlers #3": {decls: `
var hs = idempotency.NewHandlers()
var queries = New(nil) // New(pool)

// What sqlc generates (sql_package: "pgx/v5") for the block's two queries.
type DBTX interface {
	Exec(context.Context, string, ...interface{}) (pgconn.CommandTag, error)
	Query(context.Context, string, ...interface{}) (pgx.Rows, error)
	QueryRow(context.Context, string, ...interface{}) pgx.Row
}
type Queries struct{ db DBTX }
func New(db DBTX) *Queries { return &Queries{db: db} }
func (q *Queries) WithTx(tx pgx.Tx) *Queries { return &Queries{db: tx} }
type Account struct{ ID string; Credits int64 }
func (q *Queries) GetAccount(ctx context.Context, id string) (Account, error) {
	row := q.db.QueryRow(ctx, "SELECT id, credits FROM accounts WHERE id = $1", id)
	var i Account
	err := row.Scan(&i.ID, &i.Credits)
	return i, err
}
type AddCreditsParams struct{ ID string; Credits int64 }
func (q *Queries) AddCredits(ctx context.Context, arg AddCreditsParams) error {
	_, err := q.db.Exec(ctx, "UPDATE accounts SET credits = credits + $2 WHERE id = $1", arg.ID, arg.Credits)
	return err
}
`},
	"### Actions: one side effect, one owner #1": {fn: returnsAnError, decls: `
var (ctx = context.Background(); hs = idempotency.NewHandlers())
var (tx idempotency.Tx; inv *stripe.Invoice) // an owner's handler's, its ev.Object
`},
	"## Current state: refetch, don't trust the payload #1": {decls: `
var hs = idempotency.NewHandlers()
`},
	"## Current state: refetch, don't trust the payload #3": {decls: `
var hs = idempotency.NewHandlers()
var client *stripe.Client
var fetchCustomer = idempotency.Retrieve(client.V1Customers.Retrieve) // as the block's comment says
func saveEmail(ctx context.Context, tx idempotency.Tx, id, email string) error { return nil }
`},
	"### Recovering missed events #1": {decls: `
var ctx = context.Background()
var h *idempotency.Handler
`},
	"### Recovering missed events #2": {decls: `
var ctx = context.Background()
var h *idempotency.Handler
var (client *stripe.Client; since time.Time) // the first block's
var connectedAccounts []string
`},
	"## Operating it #1": {decls: `
var ctx = context.Background()
var (h *idempotency.Handler; client *stripe.Client) // the service's, as in Recovering missed events
`},
	"## Testing your handlers #1": {fn: inATest, decls: `
var (ctx = context.Background(); hs = idempotency.NewHandlers())
`},
	"## Testing your handlers #2": {decls: `
var hs = idempotency.NewHandlers()
var payload []byte // an invoice.paid of acct_1
`},
	"## Testing your handlers #3": {fn: inATest, decls: `
var (store = idempotency.NewMemoryStore(); hs = idempotency.NewHandlers())
var payload []byte // an update of sub_1
`},
	"## Testing your handlers #4": {fn: inATest, decls: `
var (store = idempotency.NewMemoryStore(); hs = idempotency.NewHandlers())
`},
	"## Testing your handlers #5": {fn: inATest, decls: `
var ctx = context.Background()
var (h *idempotency.Handler; event func(id string) []byte) // the section's first block's
`},
	"## Testing your handlers #6": {fn: inATest, decls: `
var h *idempotency.Handler // the section's first block's
`},
	"### Retention #1": {decls: `
var (ctx = context.Background(); store *idempotency.PgxStore)
func check(error) {}
var logger *slog.Logger
`},
	"### From a hand-written receiver #1": {decls: `
var hs = idempotency.NewHandlers()
var credit func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error // the program's at the top
`},
	"### Metrics and traces #1": {decls: `
var (ctx = context.Background(); store *idempotency.PgxStore; hs = idempotency.NewHandlers())
func check(error) {}
var (secrets []string; mux = http.NewServeMux(); logger *slog.Logger)
`},
	"### Metrics and traces #3": {decls: `
var (hs = idempotency.NewHandlers(); billingStore *idempotency.PgxStore)
func check(error) {}
var (provider *sdkmetric.MeterProvider; logger *slog.Logger)
`},
	"## Dashboard #1": {fn: returnsAnError, decls: `
var (store *idempotency.PgxStore; inbox *idempotency.Inbox)
var mux = http.NewServeMux()
`},
}
