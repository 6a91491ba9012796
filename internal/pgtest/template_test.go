package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// prepareLedger prepares a schema as a store's migration does: tables
// with indexes, a default drawn from a sequence no column owns, a serial
// column, and rows the preparation itself writes.
func prepareLedger(ctx context.Context, db *pgtest.DB) error {
	_, err := db.Pool.Exec(ctx, `
CREATE TABLE versions (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT clock_timestamp());
INSERT INTO versions (version) VALUES (1), (2);
CREATE SEQUENCE seq;
CREATE TABLE items (id bigserial PRIMARY KEY, n bigint NOT NULL DEFAULT nextval('seq'), note text NOT NULL DEFAULT '');
CREATE INDEX items_note_idx ON items (note);
SELECT nextval('seq');`)
	return err
}

// query runs sql on db and returns its one text value.
func query(t *testing.T, db *pgtest.DB, sql string) string {
	t.Helper()
	var s string
	if err := db.Pool.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// versions are the rows of db's versions table, applied_at included.
func versions(t *testing.T, db *pgtest.DB) string {
	return query(t, db, `SELECT json_agg(v ORDER BY version)::text FROM versions v`)
}

// next is what a test of db sees of its data but the versions: the rows
// of items, and the numbers the next row of items draws from its two
// sequences.
func next(t *testing.T, db *pgtest.DB) string {
	return query(t, db, `WITH r AS (SELECT count(*) AS rows FROM items), i AS (INSERT INTO items DEFAULT VALUES RETURNING id, n)
SELECT format('items=%s next id=%s n=%s', r.rows, i.id, i.n) FROM r, i`)
}

// counters are the activity counters of db's items table that
// autovacuum acts on.
func counters(t *testing.T, db *pgtest.DB) string {
	return query(t, db, `SELECT format('inserted=%s deleted=%s live=%s dead=%s modified since analyze=%s inserted since vacuum=%s',
  n_tup_ins, n_tup_del, n_live_tup, n_dead_tup, n_mod_since_analyze, n_ins_since_vacuum)
FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'items'`)
}

// TestTemplateKeepsOnlyUnchangedSchemas: a schema a test of a Template
// wrote rows to and drew numbers from is given to the next test reset:
// its catalog, the prepared rows, the sequences and the activity
// counters autovacuum reads as in a freshly prepared schema. A schema whose catalog the test changed, or where it
// left planner statistics, is dropped instead, and the next test gets a
// new one.
func TestTemplateKeepsOnlyUnchangedSchemas(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t) // skips here too, not just in the subtests, without PostgreSQL
	rowsWritten := `INSERT INTO versions (version) VALUES (3); UPDATE versions SET applied_at = now() - interval '1 day' WHERE version = 1;
INSERT INTO items (note) SELECT 'x' FROM generate_series(1, 5); DELETE FROM items WHERE id < 3; SELECT nextval('seq')`
	for _, tt := range []struct {
		name   string
		change string
		kept   bool
	}{
		{"rows written", rowsWritten, true},
		{"index dropped", `DROP INDEX items_note_idx`, false},
		{"column added", `ALTER TABLE items ADD COLUMN extra integer`, false},
		{"default changed", `ALTER TABLE items ALTER COLUMN note SET DEFAULT 'y'`, false},
		{"table added", `CREATE TABLE extra (id integer)`, false},
		{"sequence added", `CREATE SEQUENCE extra_seq`, false},
		{"function added", `CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'`, false},
		{"comment added", `COMMENT ON TABLE items IS 'mine'`, false},
		{"statistics left", rowsWritten + `; ANALYZE items`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp := pgtest.NewTemplate(prepareLedger)
			var used, prepared string
			t.Run("use", func(t *testing.T) {
				db := tp.New(t, nil)
				used, prepared = db.Schema, versions(t, db)
				if _, err := db.Pool.Exec(context.Background(), tt.change); err != nil {
					t.Fatal(err)
				}
			})
			again := tp.New(t, nil)
			if !tt.kept {
				if again.Schema == used {
					t.Fatalf("the template gave back schema %s after %s", used, tt.name)
				}
				if schemaExists(t, used) {
					t.Fatalf("schema %s is still there after its test ended with %s", used, tt.name)
				}
				return
			}
			givenBack(t, again.Schema, used)
			fresh := pgtest.NewTemplate(prepareLedger).New(t, nil)
			if got, want := pgtest.Fingerprint(t, again.Schema), pgtest.Fingerprint(t, fresh.Schema); got != want {
				t.Errorf("catalog of the schema given back:\n%s\nwant, as freshly prepared:\n%s", got, want)
			}
			if got, want := counters(t, again), counters(t, fresh); got != want {
				t.Errorf("items in the schema given back: %s; freshly prepared: %s", got, want)
			}
			if got := versions(t, again); got != prepared {
				t.Errorf("versions = %s, want as prepared: %s", got, prepared)
			}
			if got, want := next(t, again), next(t, fresh); got != want {
				t.Errorf("in the schema given back: %s; freshly prepared: %s", got, want)
			}
		})
	}
}

// TestTemplateFailedTestsSchemaIsDropped: the schema of a test that
// failed is not given to another.
func TestTemplateFailedTestsSchemaIsDropped(t *testing.T) {
	t.Parallel()
	pgtest.AdminPool(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	ft := &failedT{T: t}
	used = tp.New(ft, nil).Schema
	ft.end()
	if again := tp.New(t, nil); again.Schema == used {
		t.Fatalf("the template gave back schema %s of a failed test", used)
	}
	if schemaExists(t, used) {
		t.Fatalf("schema %s of a failed test is still there", used)
	}
}

// failedT stands for a test that has failed, without failing the test it
// wraps: end runs the cleanups registered on it.
type failedT struct {
	*testing.T
	cleanups []func()
}

func (f *failedT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *failedT) Failed() bool      { return true }

func (f *failedT) end() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// TestTemplateThroughBouncer: a schema of a Template reached through
// PgBouncer is given back, reset, to the next test, whose pool works
// through PgBouncer with the schema's name as application_name.
func TestTemplateThroughBouncer(t *testing.T) {
	t.Parallel()
	b := pgtest.PgBouncer(t)
	tp := pgtest.NewTemplate(prepareLedger)
	var used string
	t.Run("use", func(t *testing.T) {
		db := b.NewFrom(t, tp, nil)
		used = db.Schema
		if _, err := db.Pool.Exec(context.Background(), `INSERT INTO `+pgx.Identifier{db.Schema, "items"}.Sanitize()+` (note) VALUES ('x')`); err != nil {
			t.Fatal(err)
		}
	})
	db := b.NewFrom(t, tp, nil)
	givenBack(t, db.Schema, used)
	var rows int
	var app string
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*), current_setting('application_name') FROM `+pgx.Identifier{db.Schema, "items"}.Sanitize()).Scan(&rows, &app); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || app != db.Schema {
		t.Fatalf("through PgBouncer: %d rows of items, application_name %q; want 0 and %q", rows, app, db.Schema)
	}
}
