// Command chaos proves the exactly-once promise end to end, under faults:
// examples/server in inbox mode, two receivers and two workers in separate
// processes on one PostgreSQL database, is sent tens of thousands of
// signed invoice.paid deliveries, each retried as Stripe retries it until
// it is answered 2xx, while processes are killed with SIGKILL, PostgreSQL
// is restarted and the servers' backends are terminated. Once the inbox
// has drained, exact checks say whether anything was lost or doubled.
//
// Run it from within the module (it builds ./examples/server with go
// build):
//
//	go run ./internal/chaos                    # 40000 deliveries, 32 senders, a fault every ~3 s
//	go run ./internal/chaos -n 10000 -json chaos.json
//	go run ./internal/chaos -database-url postgres://...   # an existing server: no PostgreSQL restarts
//	go run ./internal/chaos -lease 5s -attempt-timeout 3s   # a killed worker's events taken over sooner
//	go run ./internal/chaos -pgbouncer                      # the servers through PgBouncer (transaction pooling)
//
// Without -database-url it starts a throwaway PostgreSQL cluster of its
// own from the local server binaries (internal/pgtest: as root it runs
// them as the OS user "postgres"), and removes it at the end. With
// -database-url the servers migrate the URL's current schema, the faults
// leave PostgreSQL running, and the checks count only this run's rows
// (its ids carry a tag of the run), so a database used before is fine.
//
// The deliveries are made from the invoice.paid fixture (Stripe's own
// invoice, 5 KB) with idempotencytest.Derive and signed with
// idempotencytest.SignatureHeader: -dup of them (20%) resend an event
// already sent (same id and body, a new signature), -twin (5%) send a new
// event of an invoice already sent (invoice.payment_succeeded, the twin
// that only the grant's natural key catches), the others a new invoice of
// one of -accounts accounts. A delivery answered other than 2xx, or not
// at all, is sent again after a pause (20 ms doubling to 1 s, with
// jitter) to either receiver, for up to -retry-for.
//
// Every -fault-every (jittered, ±50%) one fault, the kinds taken in a
// shuffled round so that each comes once per round: kill-receiver and
// kill-worker (SIGKILL one, start it again), pg-restart-fast and
// pg-restart-immediate (pg_ctl restart -m fast, -m immediate; not with
// -database-url) and terminate-backends (pg_terminate_backend of every
// session of the servers). Faults go on until the sends are done and
// every kind has come at least once.
//
// With -pgbouncer the servers connect through a PgBouncer in transaction
// pooling mode, started in front of the throwaway cluster (Debian package
// pgbouncer; server_login_retry 1 s, 40 server connections), with
// examples/server's -poll-only and pgx's exec query mode, as the README's
// "Behind PgBouncer" says; chaos's own checks connect directly. Three
// kinds of fault are added, from PgBouncer's console: pgbouncer-kill
// (KILL, which drops every client and server connection of the database,
// then RESUME), pgbouncer-reconnect (RECONNECT: each server connection
// closed once its transaction ends) and pgbouncer-restart (SHUTDOWN, the
// process gone, then started again on its port). terminate-backends then
// ends the server connections PgBouncer holds.
//
// -lease and -attempt-timeout are passed to the workers (examples/server's
// flags: InboxConfig.Lease and Timeout, a minute and 30 s by default). The
// events a killed worker held are taken over once its leases expire: a
// short lease (5s, with 3s attempts) shortens the drain after a kill.
//
// Then it waits, up to -drain-timeout, until none of the run's events and
// tasks is pending, processing or failed, stops the servers and prints
// one line per check, with its value and what it must be:
//
//	C1 every event id answered 2xx is in the ledger as processed
//	C2 ledger and inbox rows = distinct event ids answered (none twice)
//	C3 credits = 100 × distinct invoices (a paid invoice grants 100)
//	C4 receipts = distinct invoices: the accounts' count, and one
//	   send-receipt task per invoice, finished
//	C5 the fake email provider saw one Idempotency-Key per invoice
//	   (a key repeated is allowed: counted and printed)
//	C6 no dead letters
//	C7 every delivery was answered 2xx in the end
//	C8 nothing left pending, processing or failed
//
// It exits 0 when every check holds, 1 when one fails or the run cannot
// be made (the servers' logs are then kept, and their directory named),
// 2 for a flag it refuses. -json FILE writes a summary: the counts, the
// faults by kind and each check. SIGINT stops the run; the servers and
// the cluster are stopped and removed, as at the end of a run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/inboxflags"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is a run's flags.
type config struct {
	n, c         int
	workers      int
	accounts     int
	dup, twin    float64
	faultEvery   time.Duration
	drainTimeout time.Duration
	retryFor     time.Duration
	// lease and attemptTimeout are the workers' -lease and
	// -attempt-timeout (InboxConfig.Lease and Timeout); a config of a
	// test's without a lease passes neither, for the server's defaults.
	lease, attemptTimeout time.Duration
	databaseURL           string
	jsonFile              string
	// pgbouncer runs the servers through a PgBouncer in transaction
	// pooling mode in front of the throwaway cluster (-poll-only).
	pgbouncer bool

	// firstFaults is the first round of faults, in this order (a test's,
	// to have the kill of a worker, whose leases expire -lease later,
	// come first); nil shuffles it as the others.
	firstFaults []string
	// maxFaults ends the faults once so many have come, sends or not; 0
	// is no limit (a test's, to keep its run short).
	maxFaults int
}

// parseFlags reads args into a config, refusing a value that cannot make
// a run with an error that names its flag.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: go run ./internal/chaos [flags]   (from within the module: it builds ./examples/server)

Runs examples/server in inbox mode (2 receivers, 2 workers) on one PostgreSQL
database, sends signed invoice.paid deliveries retried as Stripe retries them
while processes are killed and PostgreSQL is restarted, then checks that no
event was lost or doubled. Exits 0 when every check holds.

`)
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.n, "n", 40000, "deliveries to send, duplicates and twins included")
	fs.IntVar(&cfg.c, "c", 32, "concurrent senders (1 to 1000)")
	fs.IntVar(&cfg.workers, "workers", 8, "inbox workers in each worker process (1 to 1000)")
	fs.IntVar(&cfg.accounts, "accounts", 200, "accounts the invoices are spread over")
	fs.Float64Var(&cfg.dup, "dup", 0.20, "share of deliveries that resend an event already sent (same id and body, new signature)")
	fs.Float64Var(&cfg.twin, "twin", 0.05, "share of deliveries that are a new event (invoice.payment_succeeded) of an invoice already sent")
	fs.DurationVar(&cfg.faultEvery, "fault-every", 3*time.Second, "mean pause between faults, jittered ±50%; 0 injects none")
	fs.DurationVar(&cfg.drainTimeout, "drain-timeout", 5*time.Minute, "how long to wait, after the sends, for the inbox to drain")
	fs.DurationVar(&cfg.retryFor, "retry-for", 2*time.Minute, "how long one delivery is retried before it counts as never answered 2xx")
	fs.DurationVar(&cfg.lease, "lease", idempotency.DefaultLease, "the workers' -lease: how long after a worker is killed its events are taken over (InboxConfig.Lease); at least a second longer than -attempt-timeout")
	fs.DurationVar(&cfg.attemptTimeout, "attempt-timeout", idempotency.DefaultInboxTimeout, "the workers' -attempt-timeout: how long one attempt may run (InboxConfig.Timeout)")
	fs.StringVar(&cfg.databaseURL, "database-url", "", "PostgreSQL URL to run on, its current schema; empty starts a throwaway cluster (and enables the PostgreSQL restarts)")
	fs.StringVar(&cfg.jsonFile, "json", "", "write a JSON summary (counts, faults by kind, checks) to this file")
	fs.BoolVar(&cfg.pgbouncer, "pgbouncer", false, "run the servers through a PgBouncer in transaction pooling mode (-poll-only), started in front of the throwaway cluster, and add its faults; not with -database-url")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, printedError{err} // the flag package printed it, with the usage
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: chaos takes flags only", fs.Arg(0))
	}
	switch {
	case cfg.n < 1:
		return cfg, fmt.Errorf("-n must be at least 1, got %d", cfg.n)
	case cfg.c < 1 || cfg.c > 1000:
		return cfg, fmt.Errorf("-c must be between 1 and 1000, got %d", cfg.c)
	case cfg.workers < 1 || cfg.workers > 1000:
		return cfg, fmt.Errorf("-workers must be between 1 and 1000, got %d", cfg.workers)
	case cfg.accounts < 1:
		return cfg, fmt.Errorf("-accounts must be at least 1, got %d", cfg.accounts)
	case !(cfg.dup >= 0 && cfg.dup < 1):
		return cfg, fmt.Errorf("-dup must be at least 0 and below 1, got %v", cfg.dup)
	case !(cfg.twin >= 0 && cfg.twin < 1):
		return cfg, fmt.Errorf("-twin must be at least 0 and below 1, got %v", cfg.twin)
	case cfg.dup+cfg.twin >= 1:
		return cfg, fmt.Errorf("-dup and -twin together must be below 1 (the rest are new invoices), got %v", cfg.dup+cfg.twin)
	case cfg.faultEvery < 0 || (cfg.faultEvery > 0 && cfg.faultEvery < 100*time.Millisecond):
		return cfg, fmt.Errorf("-fault-every must be 0 (no faults) or at least 100ms, got %s", cfg.faultEvery)
	case cfg.drainTimeout <= 0:
		return cfg, fmt.Errorf("-drain-timeout must be positive, got %s", cfg.drainTimeout)
	case cfg.retryFor <= 0:
		return cfg, fmt.Errorf("-retry-for must be positive, got %s", cfg.retryFor)
	case cfg.pgbouncer && cfg.databaseURL != "":
		return cfg, errors.New("-pgbouncer runs PgBouncer in front of the throwaway cluster: not with -database-url")
	}
	// examples/server's own check: it would refuse them at start, after
	// the build and the cluster.
	if err := inboxflags.Check(cfg.lease, cfg.attemptTimeout); err != nil {
		return cfg, err
	}
	if cfg.databaseURL != "" {
		if _, err := pgxpool.ParseConfig(cfg.databaseURL); err != nil {
			return cfg, errBadDatabaseURL // its error may quote the URL, password and all
		}
	}
	return cfg, nil
}

// errBadDatabaseURL refuses a -database-url that pgx cannot read.
var errBadDatabaseURL = errors.New("-database-url: not a PostgreSQL connection string")

// printedError is an error the flag package has printed already.
type printedError struct{ error }

// run runs the command and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(printedError)):
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	res, err := execute(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 1
	}
	if cfg.jsonFile != "" {
		if err := res.writeJSON(cfg.jsonFile); err != nil {
			fmt.Fprintln(stderr, "chaos: -json:", err)
			return 1
		}
	}
	if !res.OK {
		return 1
	}
	return 0
}
