package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// sessionState is what a session remembers of what it was told: the
// settings it was given, its LISTENs, advisory locks, temporary tables,
// and open cursors.
const sessionState = `SELECT format('statement_timeout=%s application_name=%s listening=%s advisory=%s temp=%s cursors=%s',
  current_setting('statement_timeout'), current_setting('application_name'),
  (SELECT count(*) FROM pg_listening_channels()),
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
  (SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND pg_table_is_visible(oid)),
  (SELECT count(*) FROM pg_cursors))`

// givenBack fails t unless the template gave it schema used, the one
// the last test had.
func givenBack(t *testing.T, schema, used string) {
	t.Helper()
	if schema != used {
		t.Fatalf("the template prepared schema %s instead of giving back %s", schema, used)
	}
}

// acquire acquires a connection of db's pool, released when t ends.
func acquire(t *testing.T, db *pgtest.DB) *pgxpool.Conn {
	t.Helper()
	c, err := db.Pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c
}

// session returns the process id of the session db's pool gives first,
// and the state it remembers; the session goes back to the pool.
func session(t *testing.T, db *pgtest.DB) (pid uint32, state string) {
	t.Helper()
	c, err := db.Pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.QueryRow(context.Background(), sessionState).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return c.Conn().PgConn().PID(), state
}

// TestTemplatePooledKeepsResetSessions: the next test NewPooled gives a
// schema to gets the sessions of the last one, the same processes, reset:
// none of the settings, LISTENs, advisory locks, temporary tables or open
// cursors the last test left in them; prepared statements still work.
func TestTemplatePooledKeepsResetSessions(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t) // skips here too, not just in the subtests, without PostgreSQL
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	var pid uint32
	var fresh string
	t.Run("use", func(t *testing.T) {
		db := tp.NewPooled(t, 1)
		used = db.Schema
		pid, fresh = session(t, db)
		c := acquire(t, db)
		if _, err := c.Exec(context.Background(), `SET statement_timeout = '123s'; SET application_name = 'elsewhere'; LISTEN ch;
SELECT pg_advisory_lock(42); CREATE TEMP TABLE scratch (x int); BEGIN; DECLARE cur CURSOR WITH HOLD FOR SELECT 1; COMMIT`); err != nil {
			t.Fatal(err)
		}
		// A statement pgx prepares and caches in the session.
		var n int
		if err := c.QueryRow(context.Background(), `SELECT count(*) FROM items WHERE note = $1`, "x").Scan(&n); err != nil {
			t.Fatal(err)
		}
		var state string
		if err := c.QueryRow(context.Background(), sessionState).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == fresh {
			t.Fatalf("the session's state did not change: %s", state)
		}
	})
	again := tp.NewPooled(t, 1)
	givenBack(t, again.Schema, used)
	gotPid, state := session(t, again)
	if gotPid != pid {
		t.Fatalf("the next test's session is process %d, not the kept %d", gotPid, pid)
	}
	if state != fresh {
		t.Errorf("the kept session remembers: %s\nwant as new: %s", state, fresh)
	}
	var n int
	if err := again.Pool.QueryRow(context.Background(), `SELECT count(*) FROM items WHERE note = $1`, "x").Scan(&n); err != nil {
		t.Fatalf("the statement prepared in the last test: %v", err)
	}
}

// TestTemplatePooledNotKept: NewPooled gives a new pool, on the schema
// given back, when the last test's pool cannot serve another: the test
// closed it, terminated its session, or asked for another size; and New
// never gives a pool NewPooled kept.
func TestTemplatePooledNotKept(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	for _, tt := range []struct {
		name string
		use  func(t *testing.T, db *pgtest.DB)
		next func(t testing.TB, tp *pgtest.Template) *pgtest.DB
	}{
		{"pool closed", func(t *testing.T, db *pgtest.DB) { db.Pool.Close() },
			func(t testing.TB, tp *pgtest.Template) *pgtest.DB { return tp.NewPooled(t, 1) }},
		{"session terminated", func(t *testing.T, db *pgtest.DB) {
			pid, _ := session(t, db)
			var ended bool
			if err := pgtest.AdminPool(t).QueryRow(context.Background(), `SELECT pg_terminate_backend($1, 10000)`, int32(pid)).Scan(&ended); err != nil || !ended {
				t.Fatalf("terminate the session: %v, %v", ended, err)
			}
		}, func(t testing.TB, tp *pgtest.Template) *pgtest.DB { return tp.NewPooled(t, 1) }},
		{"other size", func(t *testing.T, db *pgtest.DB) { session(t, db) },
			func(t testing.TB, tp *pgtest.Template) *pgtest.DB { return tp.NewPooled(t, 2) }},
		{"New", func(t *testing.T, db *pgtest.DB) { session(t, db) },
			func(t testing.TB, tp *pgtest.Template) *pgtest.DB { return tp.New(t, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp := pgtest.NewTemplate(prepareLedger)
			var used string
			var last *pgxpool.Pool
			t.Run("use", func(t *testing.T) {
				db := tp.NewPooled(t, 1)
				used, last = db.Schema, db.Pool
				tt.use(t, db)
			})
			again := tt.next(t, tp)
			givenBack(t, again.Schema, used)
			if again.Pool == last {
				t.Fatal("the next test got the last test's pool")
			}
			if err := last.Ping(context.Background()); err == nil {
				t.Error("the last test's pool is still open")
			}
			if err := again.Pool.Ping(context.Background()); err != nil {
				t.Fatalf("the next test's pool: %v", err)
			}
		})
	}
}

// serverPID is the process id of the server session PgBouncer runs a
// transaction of db's pool on.
func serverPID(t *testing.T, db *pgtest.BouncerDB) int32 {
	t.Helper()
	var pid int32
	if err := db.Pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestTemplateThroughBouncerKeepsServerSessions: the next test
// Bouncer.NewFrom gives a schema to runs on the server session PgBouncer
// opened for the last one; once a test reached the schema directly (its
// cleanup terminates every session under the schema's name), the next
// runs on a new one, without an error from the one terminated.
func TestTemplateThroughBouncerKeepsServerSessions(t *testing.T) {
	t.Parallel()
	b := pgtest.PgBouncer(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	var pid int32
	t.Run("use", func(t *testing.T) {
		db := b.NewFrom(t, tp, nil)
		used, pid = db.Schema, serverPID(t, db)
	})
	t.Run("again", func(t *testing.T) {
		db := b.NewFrom(t, tp, nil)
		givenBack(t, db.Schema, used)
		if got := serverPID(t, db); got != pid {
			t.Fatalf("the next test ran on server session %d, not the kept %d", got, pid)
		}
	})
	t.Run("direct", func(t *testing.T) {
		if db := tp.New(t, nil); db.Schema != used {
			t.Fatalf("the template prepared schema %s instead of giving back %s", db.Schema, used)
		}
	})
	db := b.NewFrom(t, tp, nil)
	givenBack(t, db.Schema, used)
	if got := serverPID(t, db); got == pid {
		t.Fatalf("after a direct test, the next ran on server session %d, which that test's cleanup terminated", got)
	}
}

// TestTemplatePooledNoNotificationLeft: a notification the last test's
// session received but never read is not handed to the next test's: pgx
// keeps it in the connection until WaitForNotification asks, and a fresh
// session has none, whatever it LISTENs to.
func TestTemplatePooledNoNotificationLeft(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used, channel string
	t.Run("use", func(t *testing.T) {
		db := tp.NewPooled(t, 1)
		used, channel = db.Schema, "ch_"+db.Schema
		ident := pgx.Identifier{channel}.Sanitize()
		// The session hears its own NOTIFY before the command returns,
		// and pgx keeps the notification for a WaitForNotification.
		if _, err := db.Pool.Exec(context.Background(), `LISTEN `+ident+`; NOTIFY `+ident+`, 'the last test'`); err != nil {
			t.Fatal(err)
		}
	})
	again := tp.NewPooled(t, 1)
	givenBack(t, again.Schema, used)
	c := acquire(t, again)
	if _, err := c.Exec(context.Background(), `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// Nothing was sent since: a fresh session's wait ends with the
	// context, done already.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := c.Conn().WaitForNotification(done); err == nil {
		t.Fatalf("the next test's session received %q on %s, sent in the last test", n.Payload, n.Channel)
	}
}

// TestTemplatePooledNoStatementLeft: the statements the last test
// prepared by name, with PREPARE or pgx's Conn.Prepare, are not left in
// the session the next test gets, which may prepare its own under the
// same names, as in a fresh session.
func TestTemplatePooledNoStatementLeft(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	t.Run("use", func(t *testing.T) {
		db := tp.NewPooled(t, 1)
		used = db.Schema
		c := acquire(t, db)
		if _, err := c.Exec(context.Background(), `PREPARE by_sql AS SELECT 1`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Conn().Prepare(context.Background(), "by_pgx", `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	})
	again := tp.NewPooled(t, 1)
	givenBack(t, again.Schema, used)
	c := acquire(t, again)
	if _, err := c.Exec(context.Background(), `PREPARE by_sql AS SELECT 2`); err != nil {
		t.Errorf("PREPARE in the next test: %v", err)
	}
	if _, err := c.Conn().Prepare(context.Background(), "by_pgx", `SELECT 2`); err != nil {
		t.Errorf("Conn.Prepare in the next test: %v", err)
	}
	// Statements pgx's cache prepared in the last test still work.
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM items WHERE note = $1`, "x").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

// TestTemplatePooledLeftRunning: a goroutine the last test left running
// on its pool reaches the schema no more once the test has ended, as with
// a pool closed: its write fails, the next test finds none of its rows,
// and gets another pool.
func TestTemplatePooledLeftRunning(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	var last *pgxpool.Pool
	write := make(chan struct{})
	wrote := make(chan error, 1)
	t.Run("use", func(t *testing.T) {
		db := tp.NewPooled(t, 2)
		used, last = db.Schema, db.Pool
		session(t, db)
		go func() {
			<-write
			_, err := last.Exec(context.Background(), `INSERT INTO items (note) VALUES ('left running')`)
			wrote <- err
		}()
	})
	close(write) // the test has ended, its schema given back
	err := <-wrote
	again := tp.NewPooled(t, 2)
	givenBack(t, again.Schema, used)
	var n int
	if err := again.Pool.QueryRow(context.Background(), `SELECT count(*) FROM items WHERE note = 'left running'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the next test finds %d row(s) a goroutine of the last test wrote after it ended", n)
	}
	if err == nil {
		t.Error("a goroutine's write on its test's pool succeeded after the test ended")
	}
	if again.Pool == last {
		t.Error("the next test got the pool a goroutine of the last test still uses")
	}
}

// TestTemplatePooledStatementsDroppedByTheServer: a test that dropped its
// session's statements in SQL (DISCARD ALL, DEALLOCATE ALL), behind the
// back of pgx's statement cache, leaves the next test a session whose
// cached statements still work: the cache is emptied too.
func TestTemplatePooledStatementsDroppedByTheServer(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	const cached = `SELECT count(*) FROM items WHERE note = $1`
	for _, drop := range []string{"DISCARD ALL", "DEALLOCATE ALL"} {
		t.Run(drop, func(t *testing.T) {
			t.Parallel()
			tp := pgtest.NewTemplate(prepareLedger)
			var used string
			t.Run("use", func(t *testing.T) {
				db := tp.NewPooled(t, 1)
				used = db.Schema
				var n int
				if err := db.Pool.QueryRow(context.Background(), cached, "x").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Pool.Exec(context.Background(), drop, pgx.QueryExecModeSimpleProtocol); err != nil {
					t.Fatal(err)
				}
			})
			again := tp.NewPooled(t, 1)
			givenBack(t, again.Schema, used)
			var n int
			if err := again.Pool.QueryRow(context.Background(), cached, "x").Scan(&n); err != nil {
				t.Fatalf("the statement cached in the last test, after its %s: %v", drop, err)
			}
		})
	}
}
