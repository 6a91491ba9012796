package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestGetRowIDNoRowCanHave: GET /accounts/{id} and /subscriptions/{id} of
// an id that no row can have (a NUL byte, not UTF-8) answer 404 on both
// stores, not 503 store_unavailable on PostgreSQL, which refuses the
// query while it is up.
func TestGetRowIDNoRowCanHave(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for kind, c := range map[string]client{
		"memory":   startServer(t),
		"postgres": startServer(t, "-database-url", db.URL),
	} {
		for _, path := range []string{"/accounts/a%00b", "/accounts/a%FFb", "/subscriptions/a%00b", "/subscriptions/a%FFb"} {
			status, body := c.get(path)
			require.Equal(t, http.StatusNotFound, status, "%s %s: %s", kind, path, body)
		}
	}
}

// TestGetRowStoreUnreadableAnswered503: GET /accounts/{id} and
// /subscriptions/{id} answer 503 store_unavailable when the store cannot
// be read (here, its tables gone), as the routes' list says, not 404,
// which would say that the webhooks never wrote the row.
func TestGetRowStoreUnreadableAnswered503(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	c := startServer(t, "-database-url", db.URL)
	_, err := db.Pool.Exec(t.Context(), `DROP TABLE accounts, subscriptions`)
	require.NoError(t, err)
	for _, path := range []string{"/accounts/acct_1", "/subscriptions/sub_1"} {
		status, body := c.get(path)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s: %s", path, body)
		require.JSONEq(t, `{"error":"store_unavailable"}`, body, path)
	}
}
