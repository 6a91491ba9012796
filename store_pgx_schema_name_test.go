package idempotency_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A schema name PostgreSQL cannot hold as given is refused by
// NewPgxStore, before any statement: one that is not valid UTF-8 or holds
// a NUL byte failed every statement with the server's encoding error, and
// one over 63 bytes was cut short by the server, so that two stores whose
// schemas differ after the 63rd byte shared one schema's tables.
func TestPgxStoreRefusesSchemaNamesPostgreSQLCannotHold(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://idempotency@127.0.0.1:1/none") // never dialled
	require.NoError(t, err)
	defer pool.Close()
	for _, schema := range []string{"bad\xff", "a\x00b", strings.Repeat("s", 64)} {
		_, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: schema})
		require.ErrorContains(t, err, "PgxConfig.Schema", "%q", schema)
	}
	_, err = idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: strings.Repeat("s", 63)})
	require.NoError(t, err, "63 bytes, the most PostgreSQL keeps")
}
