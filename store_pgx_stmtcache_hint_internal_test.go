package idempotency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestStatementCacheHintCodes: both answers of a pooler that mixes up
// pgx's cached statements get the cure, 26000 as well as 42P05 (which
// TestPgxBouncerStatementCacheHint meets first), and neither a statement
// of the caller's own name nor another error does.
func TestStatementCacheHintCodes(t *testing.T) {
	for _, c := range []struct {
		code, msg string
		hinted    bool
	}{
		{"42P05", `prepared statement "stmtcache_ab12" already exists`, true},
		{"26000", `prepared statement "stmtcache_ab12" does not exist`, true},
		{"26000", `prepared statement "mine" does not exist`, false},
		{"23505", `duplicate key value violates unique constraint "stmtcache_x"`, false},
	} {
		err := statementCacheHint(fmt.Errorf("idempotency: inbox lease: %w", &pgconn.PgError{Code: c.code, Message: c.msg}))
		require.Equal(t, c.hinted, strings.Contains(err.Error(), "add default_query_exec_mode=exec"), "%s %s: %v", c.code, c.msg, err)
	}
}

// TestStatementCacheHintOnce: an error that carries the cure already (a
// handler that returns a store's error it met, wrapped) gets it no second
// time.
func TestStatementCacheHintOnce(t *testing.T) {
	pgErr := &pgconn.PgError{Code: "42P05", Message: `prepared statement "stmtcache_ab12" already exists`}
	err := statementCacheHint(fmt.Errorf("charge: %w", statementCacheHint(pgErr)))
	require.Equal(t, 1, strings.Count(err.Error(), statementCacheCure), err.Error())
	require.ErrorIs(t, err, pgErr)
}
