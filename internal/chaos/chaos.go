package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The roles' process counts, as the brief of a chaos run has always been.
const (
	nReceivers = 2
	nWorkers   = 2
)

// Bounds of the servers' start and stop.
const (
	startWait = 2 * time.Minute  // each server's start, its database included
	stopGrace = 40 * time.Second // a worker's in-flight attempts: examples/server's ShutdownTimeout is 30 s
)

// keptLine begins the line that names the directory of the servers'
// logs, kept when a run fails.
const keptLine = "the servers' logs are kept in "

// errInterrupted ends a run stopped by SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted: the servers and the cluster are stopped and removed")

// execute makes a run and checks it; stdout gets its progress and its
// checks' lines. An error is a run that could not be made or checked
// (not a check that failed: that is in the result).
func execute(ctx context.Context, cfg config, stdout io.Writer) (res *result, err error) {
	dir, err := os.MkdirTemp("", "idempotency-chaos-")
	if err != nil {
		return nil, err
	}
	logs := filepath.Join(dir, "logs")
	defer func() {
		if started, _ := os.ReadDir(logs); len(started) == 0 || err == nil && res.OK {
			_ = os.RemoveAll(dir) // no server ran, or the run passed
			return
		}
		_ = os.Remove(filepath.Join(dir, "server")) // the binary: only the logs tell anything
		fmt.Fprintf(stdout, "%s%s\n", keptLine, logs)
	}()
	if err := os.Mkdir(logs, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintln(stdout, "building examples/server")
	bin, err := buildServer(ctx, dir)
	if err != nil {
		return nil, err
	}

	dbURL, where := cfg.databaseURL, "-database-url"
	var cluster *pgtest.Cluster
	if dbURL == "" {
		if cluster, err = pgtest.StartCluster(); err != nil {
			return nil, fmt.Errorf("starting a throwaway PostgreSQL cluster: %w", err)
		}
		defer cluster.Close()
		dbURL, where = cluster.URL(), "a throwaway PostgreSQL cluster"
	}
	serversURL := dbURL
	var bouncer *pgtest.Bouncer
	if cfg.pgbouncer {
		if bouncer, err = cluster.StartBouncer(bouncerPoolSize); err != nil {
			return nil, fmt.Errorf("starting PgBouncer: %w", err)
		}
		defer bouncer.Close() // before the cluster's Close: deferred after it
		serversURL, where = bouncer.URL(""), "a throwaway PostgreSQL cluster, through PgBouncer (transaction pooling)"
	}
	tag := "c" + randomHex(5)
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, errBadDatabaseURL
	}
	poolCfg.ConnConfig.RuntimeParams["application_name"] = chaosAppName
	poolCfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	mail := newMailbox()
	mailSrv := httptest.NewServer(mail)
	defer mailSrv.Close() // after the servers stop: it waits for their requests

	secret := "whsec_chaos" + randomHex(16)
	appPrefix := "idempotency-chaos-" + tag + "-"
	var receivers, workers, all []*proc
	for i := range nReceivers + nWorkers {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		role, n := "receiver", i+1
		if i >= nReceivers {
			role, n = "worker", i+1-nReceivers
		}
		name := role + "-" + strconv.Itoa(n)
		p := &proc{name: name, bin: bin, addr: addr, logPath: filepath.Join(logs, name+".log"),
			args: []string{"-addr", addr, "-database-url", withAppName(serversURL, appPrefix+name), "-role", role, "-db-wait", startWait.String()}}
		if bouncer != nil {
			p.args = append(p.args, "-poll-only")
		}
		if role == "receiver" {
			p.args = append(p.args, "-inbox", "-secret", secret)
			receivers = append(receivers, p)
		} else {
			p.args = append(p.args, "-workers", strconv.Itoa(cfg.workers), "-mail-url", mailSrv.URL)
			if cfg.lease != 0 { // a test's config without one: the server's default
				p.args = append(p.args, "-lease", cfg.lease.String(), "-attempt-timeout", cfg.attemptTimeout.String())
			}
			workers = append(workers, p)
		}
		all = append(all, p)
	}
	defer stopAll(all, stopGrace) // at once, or after the run's own stop: then nothing is left to stop
	for _, p := range all {
		if err := p.start(); err != nil {
			return nil, err
		}
	}
	client := &http.Client{
		Timeout:   15 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.c, MaxIdleConns: 2 * cfg.c},
	}
	defer client.CloseIdleConnections()
	startCtx, cancel := context.WithTimeout(ctx, startWait)
	for _, p := range all {
		if err := p.waitHealthy(startCtx, client); err != nil {
			cancel()
			return nil, err
		}
	}
	cancel()

	gen := &generator{tag: tag, accounts: cfg.accounts, dup: cfg.dup, twin: cfg.twin}
	stats := &sendStats{acked: map[string]*invoice{}}
	snd := &sender{client: client, secret: secret, retryFor: cfg.retryFor, stats: stats}
	for _, p := range receivers {
		snd.receivers = append(snd.receivers, "http://"+p.addr)
	}
	inj := &injector{every: cfg.faultEvery, receivers: receivers, workers: workers, cluster: cluster, bouncer: bouncer, pool: pool,
		appPrefix: appPrefix, first: cfg.firstFaults, max: cfg.maxFaults, counts: map[string]int{}}
	faultsOn := "no faults"
	if cfg.faultEvery > 0 {
		faultsOn = fmt.Sprintf("a fault every ~%s (%s)", cfg.faultEvery, strings.Join(inj.kinds(), ", "))
	}
	fmt.Fprintf(stdout, "run %s: %d receivers and %d workers (examples/server, %d workers each) on %s; %d deliveries from %d senders, %s\n",
		tag, nReceivers, nWorkers, cfg.workers, where, cfg.n, cfg.c, faultsOn)

	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	sendsDone, injected := make(chan struct{}), make(chan error, 1)
	go func() {
		if cfg.faultEvery == 0 {
			injected <- nil
			return
		}
		err := inj.run(runCtx, sendsDone)
		if err != nil {
			stopRun(err)
		}
		injected <- err
	}()
	progressDone := make(chan struct{})
	go progress(stdout, cfg.n, stats, inj, sendsDone, progressDone)
	begin := time.Now()
	send(runCtx, gen, snd, cfg.n, cfg.c)
	sent := time.Since(begin)
	close(sendsDone)
	<-progressDone
	if err := <-injected; err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}

	fmt.Fprintf(stdout, "sent in %s; waiting up to %s for the inbox to drain\n", sent.Round(time.Millisecond), cfg.drainTimeout)
	begin = time.Now()
	if err := drain(ctx, pool, tag, cfg.drainTimeout); err != nil {
		return nil, err
	}
	drained := time.Since(begin)
	stopAll(all, stopGrace)

	faults, terminated := inj.faults()
	res = &result{
		Deliveries: stats.deliveries.Load(), Answered2xx: stats.answered.Load(), Attempts: stats.attempts.Load(),
		Non2xx: stats.non2xx.Load(), TransportErrors: stats.transport.Load(),
		Events: gen.nEvents, Invoices: gen.nInvs, Duplicates: gen.dups, Twins: gen.twins,
		Faults: faults, BackendsTerminated: terminated,
		SendSeconds: sent.Seconds(), DrainSeconds: drained.Seconds(),
	}
	// C7 counts every delivery asked for: one a sender never began
	// (cut by an error above) is one not answered.
	res.outcome = outcome{tag: tag, deliveries: int64(cfg.n), answered: res.Answered2xx, acked: stats.acked, mail: mail}
	res.Checks, err = checkRun(ctx, pool, res.outcome)
	if err != nil {
		return nil, err
	}
	res.print(stdout)
	return res, nil
}

// chaosAppName is the application_name of chaos's own sessions.
const chaosAppName = "idempotency-chaos"

// print writes the run's counts and its checks' lines, and sets res.OK.
func (res *result) print(w io.Writer) {
	fmt.Fprintf(w, "deliveries %d (events %d, invoices %d, duplicates %d, twins %d): %d attempts, %d answered other than 2xx, %d not answered (refused, reset, timed out)\n",
		res.Deliveries, res.Events, res.Invoices, res.Duplicates, res.Twins, res.Attempts, res.Non2xx, res.TransportErrors)
	var kinds []string
	for _, k := range faultKinds {
		if n, ok := res.Faults[k]; ok {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	fmt.Fprintf(w, "faults: %s; backends terminated %d; drained in %.1fs\n", strings.Join(kinds, ", "), res.BackendsTerminated, res.DrainSeconds)
	res.OK = true
	for _, c := range res.Checks {
		fmt.Fprintln(w, c.Line)
		res.OK = res.OK && c.OK
	}
	if res.OK {
		fmt.Fprintln(w, "PASS: every check holds")
	} else {
		fmt.Fprintln(w, "FAIL")
	}
}

// progress prints the sends' progress every few seconds until sendsDone
// is closed, then closes done.
func progress(w io.Writer, n int, stats *sendStats, inj *injector, sendsDone <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-sendsDone:
			return
		case <-tick.C:
		}
		faults, _ := inj.faults()
		total := 0
		for _, f := range faults {
			total += f
		}
		fmt.Fprintf(w, "sent %d/%d deliveries, %d answered 2xx, %d attempts, %d faults\n",
			stats.deliveries.Load(), n, stats.answered.Load(), stats.attempts.Load(), total)
	}
}

// drain waits, up to timeout, until none of the run's events and tasks
// is pending, processing or failed; at the timeout it returns nil, and
// C8 says what is left.
func drain(ctx context.Context, pool *pgxpool.Pool, tag string, timeout time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var left int64
		err := pool.QueryRow(dctx, `SELECT count(*) FROM idempotency_inbox
WHERE (starts_with(event_id, $1) OR starts_with(event_id, $2)) AND state IN ('pending', 'processing', 'failed')`,
			eventPrefix+tag, "task:send-receipt:"+invoicePrefix+tag).Scan(&left)
		if err == nil && left == 0 {
			return nil
		}
		select {
		case <-dctx.Done():
			if ctx.Err() != nil {
				return errInterrupted
			}
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// withAppName returns dbURL with application_name set to name, in the
// URL's form or the keyword/value form, whichever dbURL is.
func withAppName(dbURL, name string) string {
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		if u, err := url.Parse(dbURL); err == nil {
			q := u.Query()
			q.Set("application_name", name)
			u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // libpq does not decode '+'
			return u.String()
		}
	}
	return dbURL + " application_name=" + name // a later keyword overrides an earlier one
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
