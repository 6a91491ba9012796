package pgtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSweepKeepsSchemasOfRunningBinaries: on an external server,
// sweepOrphans drops a schema whose comment names an advisory lock nobody
// holds, but not one that a session is connected to under its name (a
// running test's pool), nor one whose lock is taken again within
// ownerGrace (a running binary whose owner session the server ended, as
// keepOwnership takes it again). The sweep runs here against the test's
// server, as a binary starting on it would.
func TestSweepKeepsSchemasOfRunningBinaries(t *testing.T) {
	s := shared(t)
	admin := AdminPool(t)
	ctx := t.Context()
	sweeper := &server{url: s.url}
	if err := sweeper.takeOwnership(); err != nil {
		t.Fatalf("take ownership: %v", err)
	}
	t.Cleanup(func() { _ = sweeper.owner.Close(context.Background()) })

	// tagged creates a schema as a binary holding key's lock would, with
	// nobody holding it now.
	tagged := func(t *testing.T) (schema string, key int64) {
		t.Helper()
		schema, key = "t_"+randomHex(8), rand.Int64()|1
		ident := pgx.Identifier{schema}.Sanitize()
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+ident+"; COMMENT ON SCHEMA "+ident+" IS '"+ownerTag+strconv.FormatInt(key, 10)+"'"); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+ident+" CASCADE") })
		return schema, key
	}
	exists := func(t *testing.T, schema string) bool {
		t.Helper()
		var ok bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema).Scan(&ok); err != nil {
			t.Fatalf("look up schema %s: %v", schema, err)
		}
		return ok
	}

	t.Run("session connected under its name", func(t *testing.T) {
		schema, _ := tagged(t)
		cfg, err := pgx.ParseConfig(s.url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["application_name"] = schema
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		sweeper.sweepOrphans()
		if !exists(t, schema) {
			t.Fatalf("schema %s, to which a session is connected under its name, was dropped", schema)
		}
	})

	t.Run("lock taken again within the grace", func(t *testing.T) {
		schema, key := tagged(t)
		pid := sweeper.owner.PgConn().PID()
		// The test sees the sweep's check, acquires a connection and takes
		// the lock within the grace: 2 s could run out on a busy machine,
		// where a dial takes seconds, and the schema was dropped.
		grace := ownerGrace
		ownerGrace = 15 * time.Second
		t.Cleanup(func() { ownerGrace = grace }) // once the sweep has returned
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			sweeper.sweepOrphans()
		}()
		t.Cleanup(func() { <-swept }) // before the owner session closes
		// The sweep found the lock free once (try, then unlock) and waits
		// out the grace: take the lock, as the binary would.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var checked bool
			if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND state = 'idle' AND query = 'SELECT pg_advisory_unlock($1)')",
				int32(pid)).Scan(&checked); err != nil {
				t.Fatal(err)
			}
			if checked {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweep did not check the schema's lock within 30 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		holder, err := admin.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Release()
		if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = holder.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key) }()
		select {
		case <-swept:
		case <-time.After(time.Minute):
			t.Fatal("sweepOrphans did not return within a minute")
		}
		if !exists(t, schema) {
			t.Fatalf("schema %s, whose lock was taken again within the grace, was dropped", schema)
		}
	})
}
