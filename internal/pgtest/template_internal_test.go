package pgtest

import (
	"context"
	"testing"
)

// TestTemplateSchemasDroppedOnAnExternalServer: at the end of the binary,
// the schemas a template keeps are dropped from an external server, which
// outlives the binary, and forgotten.
func TestTemplateSchemasDroppedOnAnExternalServer(t *testing.T) {
	t.Parallel()
	s := shared(t)
	tp := &Template{prepare: func(ctx context.Context, db *DB) error {
		_, err := db.Pool.Exec(ctx, "CREATE TABLE t (id integer)")
		return err
	}}
	var kept string
	t.Run("use", func(t *testing.T) { kept = tp.New(t, nil).Schema })
	if len(tp.free) != 1 || tp.free[0].schema != kept {
		t.Fatalf("the template keeps %v, want schema %s", tp.free, kept)
	}
	dropTemplateSchemas(&server{url: s.url, admin: s.admin}, []*Template{tp}) // no cluster: as on an external server
	var exists bool
	if err := s.admin.QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", kept).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists || len(tp.free) != 0 {
		t.Fatalf("after the binary's end: schema %s exists %v, the template keeps %v", kept, exists, tp.free)
	}
}

// TestTemplatePooledEvictsTheLongestKept: when the budget of kept
// sessions is spent, a schema given back keeps its sessions by closing
// those of the schema longest in the free list, not by keeping none.
// Not parallel: it sets the budget every template shares.
func TestTemplatePooledEvictsTheLongestKept(t *testing.T) {
	shared(t) // skips without PostgreSQL
	tp := &Template{prepare: func(ctx context.Context, db *DB) error {
		_, err := db.Pool.Exec(ctx, "CREATE TABLE t (id integer)")
		return err
	}}
	keptSessions.Lock()
	old := keptSessions.max
	keptSessions.max = keptSessions.n + 2
	keptSessions.Unlock()
	defer func() {
		keptSessions.Lock()
		keptSessions.max = old
		keptSessions.Unlock()
	}()
	twoSessions := func(t *testing.T, db *DB) {
		a, err := db.Pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		b, err := db.Pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		b.Release()
	}
	var first, second *DB
	t.Run("use", func(t *testing.T) {
		first = tp.NewPooled(t, 2)
		second = tp.NewPooled(t, 2)
		twoSessions(t, first)
		twoSessions(t, second)
	}) // second is given back first, then first
	if len(tp.free) != 2 || tp.free[0].schema != second.Schema || tp.free[1].schema != first.Schema {
		t.Fatalf("the template keeps %v, want schemas %s then %s", tp.free, second.Schema, first.Schema)
	}
	if tp.free[1].pool != first.Pool || tp.free[1].kept != 2 {
		t.Fatalf("the schema given back last keeps pool %p with %d sessions, want %p with 2", tp.free[1].pool, tp.free[1].kept, first.Pool)
	}
	if tp.free[0].pool != nil {
		t.Fatal("the schema longest in the list still keeps its pool")
	}
	if err := second.Pool.Ping(t.Context()); err == nil {
		t.Fatal("the pool of the schema longest in the list is still open")
	}
}
