package pgtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestDumpRestoreTakesTheSchemaBack: Restore of what Dump wrote takes the
// schema back to the dump: a row written since is gone, a row deleted
// since is back, a sequence continues from where it was, and the pool's
// sessions, open across the restore, read the restored table.
func TestDumpRestoreTakesTheSchemaBack(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := t.Context()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL);
INSERT INTO items (name) VALUES ('kept'), ('deleted later')`)
	require.NoError(t, err)
	backup := db.Dump(t)
	_, err = db.Pool.Exec(ctx, `INSERT INTO items (name) VALUES ('written later'); DELETE FROM items WHERE name = 'deleted later'`)
	require.NoError(t, err)

	db.Restore(t, backup)
	var names []string
	rows, err := db.Pool.Query(ctx, `SELECT name FROM items ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"kept", "deleted later"}, names)
	var id int64
	require.NoError(t, db.Pool.QueryRow(ctx, `INSERT INTO items (name) VALUES ('after the restore') RETURNING id`).Scan(&id))
	require.Equal(t, int64(3), id, "the sequence as dumped")
}
