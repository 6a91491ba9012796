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
