// Command server is a runnable Stripe webhook receiver built on the
// idempotency package: every paid invoice grants its account 100 credits and
// a receipt exactly once, however Stripe delivers it, and sends one receipt
// email through a task to a fake mailer in the process. With a Stripe API
// key it also keeps a table of subscriptions equal to Stripe's, refetching
// each subscription an event is about (idempotency.OnCurrent).
//
//	go run ./examples/server -secret whsec_...                       # memory store
//	go run ./examples/server -secret whsec_... -database-url postgres://...
//	go run ./examples/server -secret whsec_... -database-url postgres://... -db-wait 2m
//	go run ./examples/server -secret whsec_... -database-url postgres://... -inbox -workers 8
//	go run ./examples/server -secret whsec_... -database-url postgres://... -inbox -role receiver
//	go run ./examples/server -database-url postgres://... -role worker -addr 127.0.0.1:4243
//	STRIPE_SECRET_KEY=rk_test_... go run ./examples/server -secret whsec_...
//	DASHBOARD_PASSWORD=s3cret go run ./examples/server -secret whsec_... -dashboard  # /admin/webhooks/, user admin
//	go run ./examples/server -secret whsec_... -metrics-addr :9090          # Prometheus metrics
//	stripe listen --forward-to 127.0.0.1:4242/webhook                # prints the secret
//
// With -database-url, start-up waits for a database that is not up yet:
// connecting and migrating are retried with exponential backoff (100 ms
// doubling to 5 s, with jitter) for up to -db-wait (default 60s), each
// failed attempt logged once; then the server exits with status 1 and one
// message. Errors that waiting cannot fix (a malformed URL, a wrong
// password, an unknown role) end it at once.
//
// A flag, a flag's value, an argument or an environment variable that the
// server refuses is reported on one line, and it exits 2; one that the flag
// package refuses (an unknown flag, a value that does not parse) is
// followed by the usage, as flag.ExitOnError prints it. Any other failure
// exits 1. -h exits 0, and so does a stop (SIGINT, SIGTERM), also one
// while start-up waits for the database. A stop while serving logs
// "stopping" as it starts, with its cause (the signal), and "stopped"
// once everything has stopped, with how long that took and whether what
// was in flight finished before its deadline (in_flight_finished): 15 s
// for the deliveries, the inbox's ShutdownTimeout (-attempt-timeout, 30
// s by default) for the attempts, after which they are cut and retried
// (Inbox.Run says so, and a Warn line before "stopped" gives how many
// attempts it cut). At the
// deliveries' deadline the requests' context is cancelled: a
// subscription's fetch from the Stripe API fails then, and its delivery
// rolls back, answered 503 for Stripe to send it again. The library runs
// a delivery's transaction detached from the request, so one held up
// elsewhere ends within Config.Timeout (10 s; twice that for a thin
// event). The store closes only once every request has returned; one
// that begins after the deadline is answered 503 {"error":"stopping"}
// without running.
//
// With -inbox, deliveries are stored and answered {"outcome":"queued"} at
// once, and workers in the same process apply them (idempotency.Inbox):
// /accounts/{id} shows a grant once a worker has applied it. Without it,
// the webhook applies each event before answering.
//
// -lease and -attempt-timeout are the workers' InboxConfig.Lease (1
// minute) and Timeout (30 s): how long a worker holds an event or a task
// before another may take it over, as from a process that was killed,
// and how long one attempt may run before it is cut and retried. The
// lease must exceed the timeout by a second at least; NewInbox's check
// of them runs at start, before the database is waited for. A stop gives
// the attempts in flight the timeout (InboxConfig.ShutdownTimeout's
// default): none is cut that would not have been anyway.
//
// -role splits that between processes on one database (-database-url):
// -role receiver (with -inbox) verifies, stores and answers the
// deliveries and runs no workers; -role worker runs the inbox's workers,
// which apply the events the receivers stored and run the tasks, and
// serves no POST /webhook (404) and needs no signing secret. The default,
// all, runs both. Every role serves the GET routes, the dashboard and the
// metrics, and prunes (-prune-every); -recover-since runs on receivers,
// through their webhook. A combination that cannot work is refused at
// start: a receiver or worker on the in-memory store (no other process
// sees its events), a receiver without -inbox (its webhook would apply
// the events itself), a flag of what the role does not run.
//
// In both modes the grant enqueues a send-receipt task in the event's
// transaction, once per invoice, and the inbox's workers (-workers of them)
// send the email after the commit with the task's idempotency key. The
// mailer logs one line per email sent ("email sent"). It is a fake one in
// the process, or with -mail-url an email provider's API (or a fake one)
// that the email is POSTed to as JSON with an Idempotency-Key header; an
// answer other than a 2xx fails the attempt, and the task is retried.
//
// The subscription projection handles customer.subscription.created,
// .updated and .deleted: each event fetches the subscription from the
// Stripe API (GET /v1/subscriptions/{id}, as the event's connected account
// for a Connect event) and replaces its row in the subscriptions table, so
// that events delivered out of order leave the API's state (a subscription
// whose first item's period ends outside the years 1 to 9999, or whose id,
// customer or status holds a NUL byte, is skipped, with that reason: no
// row keeps it). The key comes
// from the environment alone, STRIPE_SECRET_KEY (a restricted key with read
// access to subscriptions is enough; -recover-since needs read access to
// events too), and is never logged; -stripe-api-base
// points the client at a local stripe-mock or fake (refused without a
// key). Without a key those events are answered ignored, and the server
// says so at start. -mode live (or test) sets Config.Mode: a delivery of
// the other mode is answered 400, and a key of the other mode is refused
// at start.
//
// Routes:
//
//	POST /webhook             the idempotency handler (synchronous, or the inbox's with -inbox)
//	GET  /accounts/{id}       {"id":..,"credits":N,"receipts":N,"plan_until":RFC3339 or null}, or 404; 503 when the store cannot be read
//	GET  /subscriptions/{id}  {"id":..,"customer":..,"status":..,"current_period_end":RFC3339 or null,"updated_at":RFC3339}, or 404; 503 likewise
//	                          (either: 500 {"error":"internal_error"}, logged, for a row holding a time past the year 9999)
//	GET  /healthz             200 when the store answers, 503 otherwise
//	GET  /inbox/stats         {"counts":{"pending":N,...},"task_counts":{...},"oldest_pending":RFC3339 or null,
//	                          "last_attempt":RFC3339 or null}: counts are events and tasks together (Inbox.Stats),
//	                          task_counts the tasks among them, last_attempt when the newest attempt started
//	     /admin/webhooks/     with -dashboard: the operator dashboard (package dashboard), behind basic auth
//
// With -metrics-addr, GET http://ADDR/metrics serves the deliveries,
// attempts, inbox depth, dead letters, rows pruned and Stripe API fetches in
// Prometheus's text format (package otel, through OpenTelemetry's
// Prometheus exporter), on that address alone.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/inboxflags"
	"github.com/seed-a84bb619/idempotency/internal/interrupt"
	"github.com/seed-a84bb619/idempotency/internal/pgconfig"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

func main() {
	// After the first signal, a second one ends the server at once: the
	// drain can take 15 s and more.
	err := run(interrupt.Context(), os.Args[1:], os.Getenv, os.Stderr, nil)
	var usage *usageError
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the usage was printed, nothing failed
	case errors.As(err, &usage):
		if !usage.printed {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// usageError is a flag, a flag's value, an argument or an environment
// variable that run refuses: the command exits 2, as the flag package's
// commands and idemctl do, where a failure exits 1. printed is set when the
// flag package has printed the error already, with the usage.
type usageError struct {
	err     error
	printed bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError with the message format makes of args.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// maxWorkers is the most -workers the inbox takes (InboxConfig.Workers).
const maxWorkers = 10000

// readTimeout bounds the reading of a whole request, its body included
// (Stripe's own deliveries take a few milliseconds); a test shortens it.
var readTimeout = 30 * time.Second

// healthzTimeout bounds the store's ping behind GET /healthz, which a
// probe calls every few seconds; the tests lengthen it, their machine's
// ping taking seconds at times.
var healthzTimeout = 2 * time.Second

// run parses args, opens the store and serves until ctx is done. When ready
// is not nil, it receives the listening address.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:4242", "listen address")
	secrets := fs.String("secret", "", "webhook signing secrets, comma-separated (default env STRIPE_WEBHOOK_SECRET; -role worker needs none)")
	dbURL := fs.String("database-url", "", "PostgreSQL URL (default env DATABASE_URL); empty uses the in-memory store")
	dbWait := fs.Duration("db-wait", 60*time.Second, "how long start-up keeps retrying a database that is not up yet before giving up")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	inboxMode := fs.Bool("inbox", false, "store each event and answer at once; workers apply it (durable inbox)")
	workers := fs.Int("workers", idempotency.DefaultWorkers, "inbox workers (1 to "+strconv.Itoa(maxWorkers)+"): tasks (receipt emails) run at once, and events stored with -inbox (here, or by a -role receiver) applied")
	ingestWorkers := fs.Int("ingest-workers", 0, "with -inbox, how many of the workers apply events while this process is storing deliveries (0: half of -workers; -workers: all, always)")
	lease := fs.Duration("lease", idempotency.DefaultLease, "how long an inbox worker holds an event or task before another worker may take it over, as from a process that died (InboxConfig.Lease); at least a second longer than -attempt-timeout")
	attemptTimeout := fs.Duration("attempt-timeout", idempotency.DefaultInboxTimeout, "how long one inbox attempt at an event or task may run, its claim, handler and commit, before it is cut and retried (InboxConfig.Timeout); a stop gives the attempts in flight as long")
	pollOnly := fs.Bool("poll-only", false, "no LISTEN/NOTIFY for the inbox's workers (behind PgBouncer in transaction mode)")
	stripeAPIBase := fs.String("stripe-api-base", stripe.APIURL, "the Stripe API the subscription projection fetches from (a local stripe-mock or fake); the key is env STRIPE_SECRET_KEY")
	receiptEmails := fs.Bool("receipt-emails", true, "send one receipt email per paid invoice through a task (false: credits only, as the benchmark's baseline does)")
	mailURL := fs.String("mail-url", "", "POST each receipt email as JSON, with its task's Idempotency-Key header, to this email provider's URL (or a fake one); empty keeps them in a fake mailer in the process")
	pruneEvery := fs.Duration("prune-every", time.Hour, "delete what the default idempotency.Retention no longer keeps (ids after 45 days, finished events after 7, dead-lettered events after 90, dead-lettered tasks after 135) this often, in every process whatever its -role; 0 is off")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. :9090); empty is off")
	mode := fs.String("mode", "", "the endpoint's mode, live or test: deliveries of the other mode are answered 400, and a STRIPE_SECRET_KEY of the other mode is refused (empty checks nothing)")
	recoverSince := fs.Duration("recover-since", 0, "with STRIPE_SECRET_KEY (read access to events): at start, replay this account's events of this last period (at most 720h; not connected accounts') from the Events API through the webhook path, resuming a stopped run of the same period (checkpoint "+recoverCheckpoint+"-<period>), on receivers (-role all or receiver); 0 is off")
	role := fs.String("role", roleAll, "what this process runs: all (the webhook and the inbox's workers), receiver (with -inbox: verifies, stores and answers deliveries; no workers) or worker (the workers, applying what receivers stored and running the tasks; no POST /webhook, no -secret needed); receiver and worker need -database-url. Every role serves the GET routes, -dashboard and -metrics-addr")
	dash := addDashboardFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err: err, printed: true}
	}
	if fs.NArg() > 0 {
		// The flag package stops at the first argument that is not a
		// flag: "-inbox true" would silently ignore every flag after it.
		// Only a bool's value is quoted: another may be part of a secret
		// ("-secret whsec_a, whsec_b" unquoted in the shell).
		if _, err := strconv.ParseBool(fs.Arg(0)); err == nil {
			return usagef("unexpected argument %q: this command takes flags only (a bool flag takes its value as -inbox=false)", fs.Arg(0))
		}
		return usagef("unexpected argument after the flags (not shown: it may be part of a secret): this command takes flags only (a value with spaces needs quotes)")
	}
	dbURLFrom := "-database-url" // or the environment, below
	if *dbURL == "" {
		dbURLFrom = "DATABASE_URL"
	}
	// The environment fills what the flags leave empty after parsing: as
	// the flags' defaults these secrets would be printed by -h and by the
	// usage a mistyped flag prints.
	for p, key := range map[*string]string{secrets: "STRIPE_WEBHOOK_SECRET", dbURL: "DATABASE_URL", dash.password: "DASHBOARD_PASSWORD"} {
		if *p == "" {
			*p = getenv(key)
		}
	}
	if err := dash.check(); err != nil {
		return &usageError{err: err}
	}
	if err := checkRole(fs, *role, *inboxMode, *dbURL != ""); err != nil {
		return err
	}
	if *dbWait <= 0 {
		return usagef("-db-wait must be positive, got %s", *dbWait)
	}
	if *pruneEvery != 0 && *pruneEvery < time.Minute {
		return usagef("-prune-every must be 0 (off) or at least a minute, got %s", *pruneEvery)
	}
	switch idempotency.Mode(*mode) {
	case "", idempotency.ModeLive, idempotency.ModeTest:
	default:
		return usagef("-mode must be live or test, got %q", *mode)
	}
	if *recoverSince < 0 || *recoverSince > idempotency.RecoveryWindow {
		return usagef("-recover-since must be between 0 and %s (the Events API's window), got %s", idempotency.RecoveryWindow, *recoverSince)
	}
	// Here, not where the inbox is made: that is once the database is up,
	// and its error names InboxConfig's fields.
	if *workers < 1 || *workers > maxWorkers {
		return usagef("-workers must be between 1 and %d, got %d", maxWorkers, *workers)
	}
	if *ingestWorkers < 0 || *ingestWorkers > *workers {
		return usagef("-ingest-workers must be between 0 (half of -workers) and -workers (%d), got %d", *workers, *ingestWorkers)
	}
	if !*inboxMode && flagSet(fs, "ingest-workers") { // the roles apart refused it above
		return usagef("-ingest-workers sets how many workers apply events while this process stores deliveries, with -inbox: without it the webhook applies each event itself")
	}
	// Here, not where the inbox is made, once the database is up: the
	// same check, as the Handler's of the secrets is made below.
	if err := inboxflags.Check(*lease, *attemptTimeout); err != nil {
		return &usageError{err: err}
	}
	if *dbURL != "" {
		// Here, before the database is waited for, as a flag's value;
		// openPostgres parses it again.
		if _, err := pgconfig.Parse(*dbURL); err != nil { // its error never quotes the URL
			return usagef("%s: %v", dbURLFrom, err)
		}
	}
	if err := checkMailURL(*mailURL); err != nil {
		return &usageError{err: err}
	}
	if err := checkAddr("addr", *addr); err != nil {
		return err
	}
	if *metricsAddr != "" {
		if err := checkAddr("metrics-addr", *metricsAddr); err != nil {
			return err
		}
	}
	var secretList []string
	for s := range strings.SplitSeq(*secrets, ",") {
		if s = strings.TrimSpace(s); s != "" {
			secretList = append(secretList, s)
		}
	}
	switch {
	case len(secretList) == 0 && *role != roleWorker:
		return usagef("no webhook signing secret: pass -secret whsec_... or set STRIPE_WEBHOOK_SECRET (`stripe listen` prints one)")
	case len(secretList) > 0:
		// The Handler that uses them is made once the database is up:
		// its check of the secrets (an API key passed for one) runs here
		// too. A worker, which makes none, checks those it is given.
		if _, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.Config{Secrets: secretList}); err != nil {
			return usagef("-secret (or STRIPE_WEBHOOK_SECRET): %v", err)
		}
	}
	var api *stripe.Client
	key := getenv("STRIPE_SECRET_KEY")
	if key != "" {
		c, err := newStripeClient(key, *stripeAPIBase)
		if err != nil {
			return &usageError{err: err} // the key or -stripe-api-base
		}
		if km := stripeapi.KeyMode(key); *mode != "" && km != "" && km != *mode {
			// Its fetches would find none of the endpoint's objects, and
			// -recover-since would list the other mode's events.
			return usagef("-mode %s, and STRIPE_SECRET_KEY is a %s-mode key: use a key of the endpoint's mode", *mode, km)
		}
		api = c
	}
	if *recoverSince > 0 && api == nil {
		return usagef("-recover-since needs STRIPE_SECRET_KEY: recovery lists events from the Stripe API")
	}
	if api == nil && flagSet(fs, "stripe-api-base") {
		// Without a key nothing calls the API: the URL, even a malformed
		// one, would be taken and never used.
		return usagef("-stripe-api-base needs STRIPE_SECRET_KEY: without it nothing calls the Stripe API")
	}
	// After every check: a refused start leaves the last run's profile.
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return usagef("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	svc, closeStore, err := openStore(ctx, *dbURL, *dbWait, logger)
	if err != nil {
		if ctx.Err() != nil {
			// SIGINT or SIGTERM: a stop asked for, as once serving, and
			// not the database's failure.
			logger.Info("stopped while waiting for the database")
			return nil
		}
		return err
	}
	// A stop asked for while serving is logged as it starts ("stopping")
	// and once everything has stopped, the store closed ("stopped").
	var stop stopping
	defer stop.stopped(logger)
	defer closeStore()
	svc.mailer, svc.stripe, svc.noReceipts, svc.mode = newMailer(logger).postingTo(*mailURL), api, !*receiptEmails, idempotency.Mode(*mode)
	svc.noWebhook = *role == roleWorker

	m, err := startMetrics(*metricsAddr, logger)
	if err != nil {
		return err
	}
	defer m.close() // before the store closes
	inboxCfg := idempotency.InboxConfig{Workers: *workers, IngestWorkers: *ingestWorkers, Lease: *lease, Timeout: *attemptTimeout,
		PollOnly: *pollOnly, ShutdownTimeout: workersStopGrace(*attemptTimeout), Logger: logger, Observer: m.observer()}
	srv, err := newServer(svc, secretList, logger, *inboxMode, inboxCfg)
	if err != nil {
		return err
	}
	if err := m.observeInbox(srv.inbox); err != nil {
		return err
	}
	inbox := srv.inbox
	if api == nil {
		logger.Warn("subscription events are ignored: STRIPE_SECRET_KEY is not set, and the subscriptions table is written from the Stripe API, never from payloads",
			"events", strings.Join(subscriptionEvents, ","))
	} else {
		logger.Info("subscription events refetch the subscription from the Stripe API", "stripe_api", loggedAPIBase(key, *stripeAPIBase))
	}
	// The address and the routes first: a failure there returns before any
	// goroutine starts.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	routes, err := dash.mount(srv, svc.store, logger)
	if err != nil {
		ln.Close()
		return err
	}
	// Cancelled once Serve returns, however it ends: the goroutines below
	// stop, and their waits, deferred, end.
	asked := ctx // done at a stop asked for (SIGINT, SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	// The workers run in both modes: they send the receipts, and with
	// -inbox they apply the events too. A receiver leaves both to the
	// workers of other processes.
	if *role != roleReceiver {
		workersDone := make(chan struct{})
		var workersErr error
		go func() {
			defer close(workersDone)
			workersErr = inbox.Run(ctx)
		}()
		defer func() { // in-flight attempts finish before the store closes
			<-workersDone
			switch {
			case errors.Is(workersErr, idempotency.ErrShutdownTimeout):
				// Run cut them at its deadline, and says how many.
				logger.Warn("inbox attempts cut at the stop", "error", workersErr)
				stop.cut()
			case workersErr != nil:
				logger.Error("inbox workers", "error", workersErr)
			}
		}()
	}
	if p, ok := svc.store.(idempotency.Pruner); ok && *pruneEvery > 0 {
		p = m.pruner(p)
		pruned := make(chan struct{})
		go func() {
			defer close(pruned)
			_ = idempotency.PruneEvery(ctx, p, idempotency.Retention{}, *pruneEvery, logger)
		}()
		defer func() { <-pruned }() // a batch in flight commits before the store closes
	}
	// A sender that stalls in its headers or its body gives its connection
	// back after the timeouts, and an idle keep-alive one after two minutes.
	// The requests' base context is cut once Shutdown's deadline has
	// passed: a handler still running then sees its request's context
	// done, and run waits for it to return.
	cut, cutRequests := context.WithCancel(context.Background())
	defer cutRequests()
	var inFlight requests
	httpSrv := &http.Server{Handler: inFlight.handle(routes), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return baseContext(cut) }}
	drained := make(chan struct{}) // the requests in flight at the stop have returned
	go func() {
		defer close(drained)
		<-ctx.Done()
		if asked.Err() != nil {
			stop.start(logger, context.Cause(asked))
		}
		shutdownCtx, cancel := context.WithTimeout(context.Background(), deliveriesGrace)
		defer cancel()
		if httpSrv.Shutdown(shutdownCtx) != nil {
			stop.cut()    // deliveries still unanswered at the deadline
			cutRequests() // are cancelled: they roll back, and Stripe sends them again
		}
		inFlight.wait() // before the inbox, the store and its pool close
	}()
	// A worker applies the inbox's events with or without -inbox, which
	// sets how a webhook answers, and it serves none.
	logger.Info("listening", "addr", ln.Addr().String(), "store", storeName(*dbURL), "inbox", *inboxMode || *role == roleWorker, "role", *role)
	if *recoverSince > 0 {
		// Beside the webhooks, not before them: a long recovery does not
		// hold deliveries up, and both go through one ledger. It stops
		// with the server, before the store closes.
		recovered := make(chan struct{})
		go func() {
			defer close(recovered)
			recoverEvents(ctx, srv.webhook, api, *recoverSince, logger)
		}()
		defer func() { <-recovered }()
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	err = httpSrv.Serve(ln)
	// Serve returns as Shutdown begins; the requests in flight return
	// (answered, or cut at the deadline) before the workers, the metrics
	// and the store close. Should Serve fail instead, cancel starts that
	// shutdown.
	cancel()
	<-drained
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// The deadlines of what is in flight at a stop: the deliveries are
// answered within deliveriesGrace (http.Server.Shutdown's), the inbox's
// attempts within workersStopGrace (InboxConfig.ShutdownTimeout: then Run
// cuts the others, and says so). A test shortens each: workersGrace, when
// not 0, replaces the attempts' own.
var (
	deliveriesGrace = 15 * time.Second
	workersGrace    time.Duration
)

// workersStopGrace is the inbox's ShutdownTimeout with -attempt-timeout
// attemptTimeout: that timeout, InboxConfig's own default, so that a stop
// cuts no attempt that its timeout would not have cut (with
// -attempt-timeout 2m, one in flight gets up to 2 minutes, not 30 s).
func workersStopGrace(attemptTimeout time.Duration) time.Duration {
	if workersGrace > 0 {
		return workersGrace
	}
	return attemptTimeout
}

// stopping is a stop asked for while serving: when it started, and
// whether something in flight then was cut at its deadline. The zero
// stopping is none. start and cut are called on the goroutine that shuts
// the server down, before run waits for it, and cut after, as the
// workers' answer comes; stopped last.
type stopping struct {
	at   time.Time
	late bool
}

// start logs the stop as it starts, and why (the signal).
func (s *stopping) start(logger *slog.Logger, cause error) {
	s.at = time.Now()
	logger.Info("stopping", "cause", cause.Error())
}

// cut notes that work in flight at the stop was cut at its deadline.
func (s *stopping) cut() { s.late = true }

// stopped logs how long the stop took, and whether what was in flight
// finished before its deadline; nothing when no stop was asked for.
func (s *stopping) stopped(logger *slog.Logger) {
	if s.at.IsZero() {
		return
	}
	logger.Info("stopped", "took", time.Since(s.at).Round(time.Millisecond), "in_flight_finished", !s.late)
}

// The values of -role.
const (
	roleAll      = "all"
	roleReceiver = "receiver"
	roleWorker   = "worker"
)

// checkRole refuses a -role that is none, or a combination with it that
// cannot work: a receiver or worker without a database, which alone lets
// one process see the events another stored; a receiver without -inbox,
// whose webhook would apply the events itself; a flag set for what the
// role does not run (the workers' on a receiver, the webhook's on a
// worker).
func checkRole(fs *flag.FlagSet, role string, inboxMode, database bool) error {
	var unused []string // the flags set for what the role does not run
	switch role {
	case roleAll:
		return nil
	case roleReceiver:
		if !inboxMode {
			return usagef("-role receiver needs -inbox: without it the webhook applies each event itself, as -role all does")
		}
		if !database {
			return usagef("-role receiver needs -database-url (or DATABASE_URL): on the in-memory store no worker of another process sees the events it stores")
		}
		unused = setFlags(fs, "workers", "ingest-workers", "lease", "attempt-timeout", "mail-url", "receipt-emails")
		if len(unused) > 0 {
			return usagef("-role receiver runs no workers, and %s set what they do: pass it to -role worker (or all)", strings.Join(unused, ", "))
		}
	case roleWorker:
		if !database {
			return usagef("-role worker needs -database-url (or DATABASE_URL): on the in-memory store it sees no other process's events")
		}
		unused = setFlags(fs, "ingest-workers", "recover-since")
		if len(unused) > 0 {
			return usagef("-role worker serves no webhook, and %s set what it does (a worker uses all its -workers): pass it to -role receiver (or all)", strings.Join(unused, ", "))
		}
	default:
		return usagef("-role must be all, receiver or worker, got %q", role)
	}
	return nil
}

// setFlags returns those of the flags names that the command line set,
// each with its dash.
func setFlags(fs *flag.FlagSet, names ...string) []string {
	var set []string
	for _, name := range names {
		if flagSet(fs, name) {
			set = append(set, "-"+name)
		}
	}
	return set
}

// checkAddr refuses the value of the address flag name that no listen
// could take: one without a port, or whose port is none. That is found
// here, before the database is waited for; a host that is not this
// machine's is left to the listen.
func checkAddr(name, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return usagef("-%s %q: %v", name, addr, err)
	}
	return nil
}

func storeName(dbURL string) string {
	if dbURL == "" {
		return "memory"
	}
	return "postgresql"
}

// service is what newServer wires together.
type service struct {
	store         idempotency.Store
	accounts      accounts
	subscriptions subscriptions
	mailer        *Mailer
	// stripe fetches subscriptions for the projection; nil without
	// STRIPE_SECRET_KEY, and then subscription events are ignored.
	stripe *stripe.Client
	// noReceipts leaves the receipt email out (-receipt-emails=false):
	// no task is enqueued.
	noReceipts bool
	// mode is the endpoint's (-mode): Config.Mode.
	mode idempotency.Mode
	// noWebhook makes no Handler and routes no /webhook (-role worker):
	// a delivery is answered 404.
	noWebhook bool
}

// openStore returns the memory store and tables, or the PostgreSQL store
// with its migrations applied and the tables on it when dbURL is set,
// waiting up to dbWait for the database (see [openPostgres]).
func openStore(ctx context.Context, dbURL string, dbWait time.Duration, logger *slog.Logger) (service, func(), error) {
	if dbURL == "" {
		return memoryService(), func() {}, nil
	}
	return openPostgres(ctx, dbURL, dbWait, logger)
}

// memoryService is the memory store with in-memory tables.
func memoryService() service {
	return service{store: idempotency.NewMemoryStore(), accounts: newMemoryAccounts(), subscriptions: newMemorySubscriptions()}
}

// The Unix seconds of the years 1 to 9999, the times that the accounts
// and subscriptions tables keep and that /accounts/{id} and
// /subscriptions/{id} can write in RFC 3339.
const (
	firstSecond = -62135596800 // 0001-01-01T00:00:00Z
	lastSecond  = 253402300799 // 9999-12-31T23:59:59Z
)

// storableTime reports whether a row can have the time of the Unix
// seconds sec: one in the years 1 to 9999. Outside, pgx would store
// another year, and no JSON answer shows it.
func storableTime(sec int64) bool { return sec >= firstSecond && sec <= lastSecond }

// grant is the argument of the grant-invoice action.
type grant struct {
	account    string
	until      time.Time
	amountPaid int64
	currency   string
}

// receipt is the argument of the send-receipt task, stored as JSON with
// the task.
type receipt struct {
	Account    string `json:"account"`
	AmountPaid int64  `json:"amount_paid"`
	Currency   string `json:"currency"`
}

// server is the service's routes, its webhook Handler (nil with
// service.noWebhook) and the inbox whose workers the caller runs.
type server struct {
	http.Handler
	webhook *idempotency.Handler
	inbox   *idempotency.Inbox
}

// recoverCheckpoint starts the names of the example's recovery
// checkpoints, one per period: a run that stopped continues where it was
// when started again with the same -recover-since. A checkpoint refuses a
// Since earlier than its own, so a longer period has a checkpoint of its
// own: under one name, -recover-since 240h after a start with 2h was
// refused on every start for ten days.
const recoverCheckpoint = "examples-server"

// recoverEvents replays the events created in the last period from the
// Events API through h, as deliveries. Recover logs its report; a run that
// stopped is continued by the next start.
//
// Since and the Events API's window are measured from one reading of the
// clock (which also dates the checkpoint: with the run's start): with
// two, a period of the whole window (720h) would reach a moment before
// it, and be refused.
func recoverEvents(ctx context.Context, h *idempotency.Handler, api *stripe.Client, period time.Duration, logger *slog.Logger) {
	start := time.Now()
	opts := idempotency.RecoverOptions{
		Since: start.Add(-period), Checkpoint: recoverCheckpoint + "-" + period.String(),
		Now: func() time.Time { return start },
	}
	if _, err := h.Recover(ctx, api, opts); err != nil && ctx.Err() == nil {
		logger.Error("recovery stopped; start again to continue from its checkpoint", "error", err)
	}
}

// newServer wires the routes and returns them with the inbox, whose
// workers the caller runs in both modes: they send the receipt emails through
// svc.mailer, and with inboxMode they apply the events too. The Handler
// records on inboxCfg.Now, so that a test's fake clock drives both, and the
// subscription rows are dated with it; inboxCfg.Observer watches the
// Handler too.
func newServer(svc service, secrets []string, logger *slog.Logger,
	inboxMode bool, inboxCfg idempotency.InboxConfig) (*server, error) {
	store, accts, mailer := svc.store, svc.accounts, svc.mailer
	hs := idempotency.NewHandlers()
	// One receipt email per invoice, ever: the key is the invoice id, and
	// every attempt passes the same idempotency key to the mailer, which
	// sends once per key even when an attempt fails after it accepted.
	sendReceipt := idempotency.NewTask(hs, "send-receipt", func(ctx context.Context, run idempotency.TaskRun[receipt]) error {
		return mailer.Send(ctx, run.IdempotencyKey, Email{
			To:      run.Args.Account,
			Subject: "Receipt for invoice " + run.Key,
			Body:    fmt.Sprintf("Paid: %d %s.", run.Args.AmountPaid, run.Args.Currency),
		})
	})
	grantInvoice := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name:   "grant-invoice",
		Key:    "invoice id",
		Owners: []string{"invoice.paid", "invoice.payment_succeeded"},
		// Both owners pass their invoice's id: the guard is claimed with
		// the event, one round trip fewer.
		KeyIsObjectID: true,
	}, func(ctx context.Context, tx idempotency.Tx, invoiceID string, g grant) error {
		if err := accts.Grant(ctx, tx, g.account, 100, g.until); err != nil {
			return err
		}
		if svc.noReceipts {
			return nil
		}
		// Stored with the grant, or rolled back with it.
		_, err := sendReceipt.Enqueue(ctx, tx, invoiceID, receipt{Account: g.account, AmountPaid: g.amountPaid, Currency: g.currency})
		return err
	})
	onInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		inv := ev.Object
		account := inv.Metadata["account_id"]
		if account == "" {
			return idempotency.Skip("invoice has no account_id in metadata")
		}
		if !storableText(account) {
			// PostgreSQL would refuse the grant on every attempt.
			return idempotency.Skip("invoice's metadata.account_id holds a NUL byte or invalid UTF-8, which no account id can")
		}
		var until time.Time // zero: plan_until stays as it is
		// A period.end of 0 is none given, as a subscription item's
		// current_period_end of 0 is (subscriptionRow), not the Unix epoch.
		if inv.Lines != nil && len(inv.Lines.Data) > 0 && inv.Lines.Data[0].Period != nil && inv.Lines.Data[0].Period.End != 0 {
			end := inv.Lines.Data[0].Period.End
			if !storableTime(end) {
				// A retry cannot help.
				return idempotency.Skip("invoice's first line period ends outside the years 1 to 9999")
			}
			until = time.Unix(end, 0)
		}
		_, err := grantInvoice.Do(ctx, tx, inv.ID, grant{account: account, until: until, amountPaid: inv.AmountPaid, currency: string(inv.Currency)})
		return err
	}
	idempotency.On(hs, "invoice.paid", onInvoice)
	idempotency.On(hs, "invoice.payment_succeeded", onInvoice)
	if svc.stripe != nil {
		now := inboxCfg.Now
		if now == nil {
			now = time.Now
		}
		registerSubscriptions(hs, svc.stripe, svc.subscriptions, now)
	}

	inbox, err := idempotency.NewInbox(store, hs, inboxCfg) // after NewTask: it takes the tasks registered
	if err != nil {
		return nil, err
	}
	// With a key, thin (v2) notifications are fetched and handled too.
	cfg := idempotency.Config{Secrets: secrets, Logger: logger, Now: inboxCfg.Now, StripeClient: svc.stripe, Observer: inboxCfg.Observer, Mode: svc.mode}
	var webhook *idempotency.Handler
	switch {
	case svc.noWebhook:
	case inboxMode:
		webhook, err = inbox.Handler(cfg)
	default:
		webhook, err = idempotency.NewHandler(store, hs, cfg)
	}
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if webhook != nil {
		mux.Handle("/webhook", webhook)
	}
	mux.HandleFunc("GET /accounts/{id}", getRow(logger, "account", accts.Get))
	mux.HandleFunc("GET /subscriptions/{id}", getRow(logger, "subscription", svc.subscriptions.Get))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthzTimeout)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /inbox/stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := inbox.Stats(r.Context())
		if err != nil {
			logger.Error("reading inbox stats", "error", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "store_unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"counts": st.Counts, "task_counts": st.TaskCounts,
			"oldest_pending": optionalTime(st.OldestPending), "last_attempt": optionalTime(st.LastAttempt)})
	})
	return &server{Handler: mux, webhook: webhook, inbox: inbox}, nil
}

// optionalTime is t for JSON, null when it is zero.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// getRow answers GET /.../{id} with the row get returns as JSON, 404 when
// there is none, or 503 when it cannot be read. An id that no row can
// have (a NUL byte, not UTF-8) is not looked up: PostgreSQL would refuse
// the query, and the answer would say the store is unavailable.
func getRow[T any](logger *slog.Logger, what string, get func(context.Context, string) (T, bool, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !storableText(id) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
			return
		}
		row, ok, err := get(r.Context(), id)
		switch {
		case err != nil:
			logger.Error("reading "+what, "error", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "store_unavailable"})
		case !ok:
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		default:
			if err := writeJSON(w, http.StatusOK, row); err != nil {
				logger.Error("answering "+what, "error", err)
			}
		}
	}
}

// storableText reports whether a row can have s (an id, a status):
// PostgreSQL's text holds neither a NUL byte nor invalid UTF-8.
func storableText(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// writeJSON answers status with v as JSON. A v that has no JSON form (a
// time past the year 9999 in a row) is answered 500
// {"error":"internal_error"} instead, and its error returned: the status
// is sent before the body, and a 200 with an empty body reads as success.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return err
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
