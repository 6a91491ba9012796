package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The kinds of fault.
const (
	faultKillReceiver   = "kill-receiver"
	faultKillWorker     = "kill-worker"
	faultRestartFast    = "pg-restart-fast"
	faultRestartNow     = "pg-restart-immediate"
	faultTerminateConns = "terminate-backends"
	faultBouncerKill    = "pgbouncer-kill"
	faultBouncerRecon   = "pgbouncer-reconnect"
	faultBouncerRestart = "pgbouncer-restart"
)

// faultKinds are every kind of fault, in the order a run's summary
// prints them.
var faultKinds = []string{faultKillReceiver, faultKillWorker, faultRestartFast, faultRestartNow, faultTerminateConns, faultBouncerKill, faultBouncerRecon, faultBouncerRestart}

// bouncerPoolSize is the server connections of -pgbouncer's PgBouncer:
// the workers' attempts hold one each (two processes of 8 by default),
// beside the receivers' inserts and the leases.
const bouncerPoolSize = 40

// injector injects the run's faults.
type injector struct {
	every     time.Duration
	receivers []*proc
	workers   []*proc
	cluster   *pgtest.Cluster // nil on a server of -database-url: not restarted
	bouncer   *pgtest.Bouncer // the servers' PgBouncer (-pgbouncer); nil when none
	pool      *pgxpool.Pool   // chaos's own, for pg_terminate_backend
	appPrefix string          // the servers' sessions' application_name starts with it
	first     []string        // the first round, in this order; nil shuffles it as the others
	max       int             // faults to inject at most; 0 is no limit

	mu         sync.Mutex
	counts     map[string]int
	terminated int // backends terminated, over every terminate-backends
}

// kinds returns the kinds of fault the run injects.
func (in *injector) kinds() []string {
	kinds := []string{faultKillReceiver, faultKillWorker, faultTerminateConns}
	if in.cluster != nil {
		kinds = append(kinds, faultRestartFast, faultRestartNow)
	}
	if in.bouncer != nil {
		kinds = append(kinds, faultBouncerKill, faultBouncerRecon, faultBouncerRestart)
	}
	return kinds
}

// run injects a fault every in.every (jittered ±50%), the kinds in
// shuffled rounds, until sendsDone is closed and every kind has come at
// least once, or in.max have come, or ctx is done. An error is a fault that could not be
// injected (a server that would not start again); it ends the run.
func (in *injector) run(ctx context.Context, sendsDone <-chan struct{}) error {
	kinds := in.kinds()
	var round []string
	sent := false // sendsDone is closed
	for n := 0; in.max == 0 || n < in.max; n++ {
		if sent && in.allCame(kinds) {
			return nil
		}
		switch {
		case len(round) > 0:
		case in.first != nil:
			round, in.first = in.first, nil
		default:
			round = append([]string(nil), kinds...)
			rand.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		wait := in.every/2 + rand.N(in.every)
		select {
		case <-ctx.Done():
			return nil
		case <-sendsDone:
			sent, sendsDone = true, nil
			n-- // no fault this time round
			continue
		case <-time.After(wait):
		}
		kind := round[0]
		round = round[1:]
		if err := in.inject(ctx, kind); err != nil {
			if ctx.Err() != nil {
				// The run was interrupted during the fault, which cut it
				// (terminate-backends: "context canceled"): the run says
				// errInterrupted, not that the fault failed.
				return nil
			}
			return fmt.Errorf("fault %s: %w", kind, err)
		}
	}
	return nil
}

// allCame reports whether every kind has been injected at least once.
func (in *injector) allCame(kinds []string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range kinds {
		if in.counts[k] == 0 {
			return false
		}
	}
	return true
}

// inject injects one fault of kind and counts it.
func (in *injector) inject(ctx context.Context, kind string) error {
	var err error
	terminated := 0
	switch kind {
	case faultKillReceiver:
		err = in.receivers[rand.IntN(len(in.receivers))].restart()
	case faultKillWorker:
		err = in.workers[rand.IntN(len(in.workers))].restart()
	case faultRestartFast:
		err = in.cluster.Restart("fast")
	case faultRestartNow:
		err = in.cluster.Restart("immediate")
	case faultBouncerKill:
		// KILL pauses the database until RESUME: new clients wait.
		err = in.bouncer.Console(ctx, "KILL postgres", "RESUME postgres")
	case faultBouncerRecon:
		err = in.bouncer.Console(ctx, "RECONNECT postgres")
	case faultBouncerRestart:
		err = in.bouncer.Restart(ctx)
	case faultTerminateConns:
		// Behind PgBouncer a server connection carries the
		// application_name of the last client it served, or none: every
		// session of the cluster but chaos's own is PgBouncer's.
		servers, arg := `starts_with(application_name, $1)`, in.appPrefix
		if in.bouncer != nil {
			servers, arg = `backend_type = 'client backend' AND application_name <> $1`, chaosAppName
		}
		err = retryConn(ctx, func(ctx context.Context) error {
			return in.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE `+servers+` AND pid <> pg_backend_pid()`, arg).Scan(&terminated)
		})
	}
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.counts[kind]++
	in.terminated += terminated
	in.mu.Unlock()
	return nil
}

// faults returns the faults injected by kind, and the backends terminated.
func (in *injector) faults() (map[string]int, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	counts := map[string]int{}
	for _, k := range in.kinds() {
		counts[k] = in.counts[k]
	}
	return counts, in.terminated
}

// retryConn runs query until it succeeds, for up to a minute: chaos's own
// connections break too when PostgreSQL restarts.
func retryConn(ctx context.Context, query func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := query(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
