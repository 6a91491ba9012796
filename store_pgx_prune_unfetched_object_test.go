package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// OnCurrent's row of an object whose fetch never committed (no
// fetched_at) says nothing a missing row does not: Prune deletes it, as
// it deletes a row fetched before the window, and keeps one fetched
// within it.
func TestPgxPruneDeletesObjectRowsNeverFetched(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	q := quoteIdent(b.db.Schema)
	_, err := b.db.Pool.Exec(t.Context(), `INSERT INTO `+q+`.idempotency_objects (scope, object_id, fetched_at)
VALUES ('current:invoice', 'in_never', NULL), ('current:invoice', 'in_now', now())`)
	require.NoError(t, err)
	rep, err := b.store.Prune(t.Context(), idempotency.Retention{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Objects)
	var left []string
	rows, err := b.db.Pool.Query(t.Context(), `SELECT object_id FROM `+q+`.idempotency_objects`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"in_now"}, left)
}
