package pgtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dump backs db's schema up, as an operator's pg_dump does: its tables,
// their rows, indexes and sequences, in pg_dump's custom format, to a file
// of a directory the test removes when it ends, whose path it returns.
// pg_dump is taken from the directory of the server binaries (see the
// package documentation). The test is skipped when there are none, and
// fails when pg_dump fails.
func (db *DB) Dump(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), db.Schema+".dump")
	runTool(t, "pg_dump", "--dbname="+db.URL, "--schema="+db.Schema, "--format=custom", "--file="+path)
	return path
}

// Restore puts db's schema back as the file Dump wrote holds it, as an
// operator restores a backup: it drops the schema with everything in it,
// rows written since the dump included, and pg_restore recreates it.
// Sessions of db.Pool, and others open on db.URL, stay open and see the
// restored tables.
func (db *DB) Restore(t testing.TB, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := db.Pool.Exec(ctx, dropSchemaSQL(db.Schema)); err != nil {
		t.Fatalf("pgtest: restore: dropping schema %s: %v", db.Schema, err)
	}
	runTool(t, "pg_restore", "--dbname="+db.URL, "--exit-on-error", path)
}

// runTool runs a client binary of the server's installation (pg_dump,
// pg_restore) with args, failing t with its output if it fails.
func runTool(t testing.TB, name string, args ...string) {
	t.Helper()
	_, pgCtl, _, err := findBinaries()
	if err != nil {
		t.Skipf("pgtest: %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(pgCtl), name), args...)
	cmd.Env = childEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: %s: %v\n%s", name, err, out)
	}
}
