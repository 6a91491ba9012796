package pgtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartCluster starts a throwaway cluster, as the first test of a test
// binary does, for a program that is not a test: a chaos run that
// restarts it under load. The caller owns it and must [Cluster.Close] it;
// should the program die first (SIGKILL), the watchdog removes it, as for
// a test binary. Of its methods, the caller uses those that return an
// error ([Cluster.Restart]) rather than those that take a testing.TB.
// [Unavailable] tells an error that means this machine has no PostgreSQL
// to start (no binaries, no OS user "postgres" to run it as root) from
// one that is a failure.
func StartCluster() (*Cluster, error) { return startCluster() }

// Unavailable reports whether err, from [StartCluster], means that this
// machine cannot provide a PostgreSQL server, where a test skips unless
// CI=true; its text says why.
func Unavailable(err error) bool {
	var ue *unavailableError
	return errors.As(err, &ue)
}

// Restart shuts the server down in mode, "fast" as [Cluster.Stop] or
// "immediate" as [Cluster.Kill], and starts it again on the same data
// directory and port, returning once it accepts connections.
func (c *Cluster) Restart(mode string) error {
	if err := c.stop(mode); err != nil {
		return err
	}
	return c.start()
}

// Close stops the server at once (immediate mode) and removes its
// directory; a cluster closed cannot start again.
func (c *Cluster) Close() { c.destroy() }

// StartBouncer starts a PgBouncer in transaction pooling mode in front of
// c, of its own, as [PgBouncer] starts the tests' (see [Bouncer]), with
// poolSize server connections per database and user and a
// server_login_retry of one second: after PostgreSQL restarts, PgBouncer's
// default, 15 s, would refuse every login for that long once one failed.
// [Bouncer.URL] is a connection string through it; [Bouncer.Close] stops
// it. Stop it before c.
func (c *Cluster) StartBouncer(poolSize int) (*Bouncer, error) {
	if poolSize < 1 {
		return nil, fmt.Errorf("pgtest: StartBouncer: pool size %d (at least 1)", poolSize)
	}
	return startBouncer(c, poolSize, "server_login_retry = 1\n")
}

// URL returns the connection string of the server's database postgres
// through b, with application_name app, in pgx's exec query mode (no named
// prepared statements, which PgBouncer before 1.21 mixes up).
func (b *Bouncer) URL(app string) string { return b.url("postgres", app) }

// Close stops b, started by [Cluster.StartBouncer], and waits until it has
// exited.
func (b *Bouncer) Close() { b.stop() }

// Console runs commands, one after another, on b's admin console (the
// database pgbouncer, simple query protocol), as its admin user: KILL,
// RESUME, RECONNECT and the like.
func (b *Bouncer) Console(ctx context.Context, commands ...string) error {
	cfg, err := pgx.ParseConfig(b.url("pgbouncer", "pgtest_console"))
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pgtest: PgBouncer's console: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, c := range commands {
		if _, err := conn.Exec(ctx, c); err != nil {
			return fmt.Errorf("pgtest: PgBouncer's console: %s: %w", c, err)
		}
	}
	return nil
}

// Restart shuts b down at once from its console (SHUTDOWN: every client
// and server connection dropped, the process gone) and starts it again on
// the same port, returning once it serves a query.
func (b *Bouncer) Restart(ctx context.Context) error {
	err := b.Console(ctx, "SHUTDOWN") // PgBouncer ends the console's connection as it exits
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("pgtest: PgBouncer did not exit within 30s of SHUTDOWN (%v)", err)
	}
	b.stop() // closes the old launcher's stdin
	return b.launch()
}
