package pgtest_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/ci"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestStartClusterRestartRestartsTheServer: a cluster from StartCluster
// restarts in either mode, on its port and data: a connection made before
// is ended, the server's start time is later, and a table made before is
// there.
func TestStartClusterRestartRestartsTheServer(t *testing.T) {
	t.Parallel()
	c, err := pgtest.StartCluster()
	if pgtest.Unavailable(err) && !ci.On() {
		t.Skipf("no PostgreSQL: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(c.Close)

	conn, err := pgx.Connect(t.Context(), c.URL())
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `CREATE TABLE kept (id int)`)
	require.NoError(t, err)
	var started time.Time
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT pg_postmaster_start_time()`).Scan(&started))
	for _, mode := range []string{"fast", "immediate"} {
		require.NoError(t, c.Restart(mode), mode)
		require.Error(t, conn.Ping(t.Context()), "%s: the connection made before the restart is ended", mode)
		_ = conn.Close(t.Context())
		conn, err = pgx.Connect(t.Context(), c.URL())
		require.NoError(t, err, mode)
		var now time.Time
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT pg_postmaster_start_time()`).Scan(&now), mode)
		require.True(t, now.After(started), "%s: started at %s, before at %s", mode, now, started)
		started = now
		_, err = conn.Exec(t.Context(), `SELECT count(*) FROM kept`)
		require.NoError(t, err, mode)
	}
	require.NoError(t, conn.Close(t.Context()))
}
