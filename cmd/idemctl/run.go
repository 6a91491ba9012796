package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
	"github.com/seed-a84bb619/idempotency/internal/pgconfig"
)

// The exit codes; the package doc lists them for scripts.
const (
	exitOK           = 0
	exitFailed       = 1
	exitUsage        = 2
	exitNotFound     = 3
	exitUnavailable  = 4
	exitPruneRunning = 5
	exitInterrupted  = 130
)

// defaultSchema is PgxConfig.Schema's default.
const defaultSchema = "public"

// app is one invocation: where results and errors go, the environment, and
// the global flags.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// dbOffset is how far the database's clock is ahead of now, as open
	// measured it: dbNow reads the database's clock (0 before open).
	dbOffset time.Duration
	globals
	// flagGlobals are the globals each flag set parses into.
	flagGlobals map[*flag.FlagSet]*globals
}

// globals are the flags every command takes, before or after its name.
type globals struct {
	databaseURL string
	schema      string
	quiet       bool
	progress    string // auto, lines or off
}

// command is one of idemctl's commands.
type command struct {
	name    string
	args    string // the synopsis after the name
	summary string // one line, for the command list
	help    string // the rest of the command's -h
	// flags registers the command's own flags; run gets the arguments
	// left after them.
	flags func(fs *flag.FlagSet) func(ctx context.Context, a *app, args []string) error
}

// commands are listed by -h in this order.
var commands = []command{statsCommand, listCommand, ledgerCommand, showCommand, redriveCommand, forgetCommand, pruneCommand, recoverCommand, migrateCommand}

// run runs idemctl with args (without the program name) and returns its exit
// code. Results go to stdout; errors to stderr, one line each.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runAt(ctx, args, stdout, stderr, getenv, time.Now)
}

// runAt is run on the clock now, this machine's.
func runAt(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, now func() time.Time) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, now: now, flagGlobals: map[*flag.FlagSet]*globals{}}
	err := a.run(ctx, args)
	code := exitCode(ctx, err)
	// An operation that SIGINT or SIGTERM stopped fails with the context's
	// error: "interrupted" below says it, once.
	stopped := code == exitInterrupted && errors.Is(err, ctx.Err())
	if err != nil && !errors.Is(err, errHelp) && !stopped {
		fmt.Fprintln(stderr, "idemctl: "+display.Line(err.Error()))
	}
	if code == exitInterrupted {
		fmt.Fprintln(stderr, "idemctl: interrupted")
	}
	return code
}

// errHelp reports that -h was asked for and the help written: exit 0.
var errHelp = errors.New("help")

func (a *app) run(ctx context.Context, args []string) error {
	a.globals = globals{schema: defaultSchema, progress: "auto"}
	fs := a.flagSet("idemctl")
	if err := a.parse(fs, args, a.usage); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("no command given; see idemctl -h")
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") { // help, help -h
			a.usage(a.stdout)
			return errHelp
		}
		name, rest = rest[0], []string{"-h"}
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		cfs := a.flagSet("idemctl " + c.name)
		runCmd := c.flags(cfs)
		if err := a.parse(cfs, rest, func(w io.Writer) { a.commandUsage(w, c, cfs) }); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if err := a.checkGlobal(); err != nil {
			return err
		}
		// Parsing stops at the first argument: a flag after an id would
		// be taken for an id, and "forget evt_1 -schema billing" would
		// forget evt_1 in another schema.
		for _, arg := range cfs.Args() {
			if len(arg) > 1 && arg[0] == '-' {
				return fmt.Errorf("%s: %w", c.name, usageError("flag %s after the arguments: flags go before them", arg))
			}
		}
		if err := runCmd(ctx, a, cfs.Args()); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		return nil
	}
	return usageError("unknown command %q; see idemctl -h", name)
}

// flagSet returns a flag set with the global flags, so that they may come
// before the command or after it: parse copies those set on it into a.
// Its output is discarded: run prints errors on one line, and the help
// itself.
func (a *app) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globals{}
	// No default from DATABASE_URL here: -h prints defaults, and the URL
	// may hold a password.
	fs.StringVar(&g.databaseURL, "database-url", "", "PostgreSQL `URL` of the service's database (default env DATABASE_URL)")
	fs.StringVar(&g.schema, "schema", defaultSchema, "the `schema` of the store's tables (PgxConfig.Schema)")
	fs.BoolVar(&g.quiet, "quiet", false, "no progress on stderr (as -progress off)")
	fs.StringVar(&g.progress, "progress", "auto", "how the long operations (prune, recover, redrive) show progress on stderr, a `mode`: auto (a bar when stderr is a terminal), lines (one line per step, for logs), off")
	a.flagGlobals[fs] = g
	return fs
}

// parse parses args, answering -h with usage on stdout.
func (a *app) parse(fs *flag.FlagSet, args []string, usage func(io.Writer)) error {
	err := fs.Parse(args)
	if g := a.flagGlobals[fs]; g != nil {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "database-url":
				a.databaseURL = g.databaseURL
			case "schema":
				a.schema = g.schema
			case "quiet":
				a.quiet = g.quiet
			case "progress":
				a.progress = g.progress
			}
		})
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(a.stdout)
		return errHelp
	case err != nil:
		return usageError("%v", err)
	}
	return nil
}

// checkGlobal validates the global flags.
func (a *app) checkGlobal() error {
	switch a.progress {
	case "auto", "lines", "off":
	default:
		return usageError("-progress %q: want auto, lines or off", a.progress)
	}
	if strings.TrimSpace(a.schema) == "" {
		return usageError("-schema is empty")
	}
	return nil
}

// open connects to the database and returns the store; close releases the
// connections. It checks that the database answers, so that an unreachable
// one is reported as such (exit 4) before anything is done.
func (a *app) open(ctx context.Context) (store *idempotency.PgxStore, closeFn func(), err error) {
	url := a.databaseURL
	if url == "" {
		url = a.getenv("DATABASE_URL")
	}
	if url == "" {
		return nil, nil, usageError("no database: pass -database-url or set DATABASE_URL")
	}
	cfg, err := pgconfig.Parse(url) // its error never quotes the URL
	if err != nil {
		return nil, nil, usageError("-database-url: %v", err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, usageError("-database-url: %v", err)
	}
	// The CLI is short-lived: it keeps no memory of claims.
	store, err = idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: a.schema, RecentClaims: -1})
	if err != nil {
		pool.Close()
		return nil, nil, usageError("%v", err)
	}
	if err := store.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("database: %w", err)
	}
	a.measureClock(ctx, pool)
	return store, pool.Close, nil
}

// measureClock sets dbOffset from one reading of the database's clock
// between two of idemctl's, so that what idemctl writes in the inbox (a
// redrive's due time, RedrivenAt), the times it selects by and the ages
// and lease ends it shows are on the replicas' clock (Run warns when a
// replica's is more than a second from the database's), whatever this
// machine's says. A reading that fails leaves idemctl's own clock, and
// says nothing: it follows a Ping that succeeded, so the command's own
// queries most likely fail too, and say why.
func (a *app) measureClock(ctx context.Context, pool *pgxpool.Pool) {
	sent := a.now()
	var db time.Time
	if err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err != nil {
		return
	}
	received := a.now()
	a.dbOffset = db.Sub(sent.Add(received.Sub(sent) / 2))
}

// dbNow is the database's time now, by idemctl's clock and the offset
// open measured.
func (a *app) dbNow() time.Time {
	return a.now().Add(a.dbOffset)
}

// openInbox opens the store and its inbox for operator use: no handlers,
// and Run is never called.
func (a *app) openInbox(ctx context.Context) (*idempotency.PgxStore, *idempotency.Inbox, func(), error) {
	store, closeFn, err := a.open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Now: a.dbNow})
	if err != nil {
		closeFn()
		return nil, nil, nil, err
	}
	return store, in, closeFn, nil
}

// exitError carries an exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad flag or argument: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// notFoundError is an id that the store does not have: exit 3.
func notFoundError(format string, args ...any) error {
	return &exitError{code: exitNotFound, err: fmt.Errorf(format, args...)}
}

// exitCode maps err to the exit code a script reads.
func exitCode(ctx context.Context, err error) int {
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case interrupted(ctx, err):
		return exitInterrupted
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, idempotency.ErrInvalidKey): // a flag or argument the store cannot hold
		return exitUsage
	case errors.Is(err, idempotency.ErrStoreUnavailable):
		return exitUnavailable
	}
	return exitFailed
}

// interrupted reports whether SIGINT or SIGTERM (ctx cancelled) stopped
// the operation that returned err: a signal that lands after it returned
// without an error stopped nothing, and the run is done (exit 0).
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}

// storeErr adds a hint to errors that mean the store's tables are not in
// the schema: the schema was never migrated, or -schema is wrong.
func (a *app) storeErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
		return fmt.Errorf("the store's tables are not in schema %q (pass -schema, or run idemctl migrate): %w", a.schema, err)
	}
	return err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
