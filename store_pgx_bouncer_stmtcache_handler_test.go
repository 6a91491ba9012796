package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxBouncerStatementCacheHintHandlerError: a handler's own statement
// through PgxTx, behind a transaction-pooling PgBouncer with pgx's default
// exec mode, meets another process's cached statement as the store's do,
// but Run returned the handler's error without the cure the store's errors
// carry (TestPgxBouncerStatementCacheHint): the event failed and was
// retried, and Result.Err, the inbox's LastError and the log line said
// nothing of it. The error Run returns now ends with the cure, once, and
// still is the handler's: errors.Is and errors.As find it, and its text is
// quoted as it is.
func TestPgxBouncerStatementCacheHintHandlerError(t *testing.T) {
	t.Parallel()
	stores := cachedBouncerStores(t)
	var mine, failed error // the handler's statement's error, and what Run returned
	for i := 0; i < 100 && mine == nil; i++ {
		_, err := stores[i%2].Run(t.Context(), idempotency.Claim{EventID: fmt.Sprintf("evt_stmtcache_handler_%d", i)},
			func(ctx context.Context, tx idempotency.Tx) error {
				var n int
				mine = idempotency.PgxTx(tx).QueryRow(ctx, `SELECT $1::int AS handler_statement`, i).Scan(&n)
				return mine
			})
		failed = err
	}
	require.Error(t, mine, "no handler statement of one pool met the other's")
	require.ErrorContains(t, mine, "stmtcache_")
	require.ErrorIs(t, failed, mine)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(failed, &pgErr), "%v", failed)
	require.Contains(t, failed.Error(), mine.Error())
	require.Equal(t, 1, strings.Count(failed.Error(), "add default_query_exec_mode=exec to the database URL"), failed.Error())
}
