package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestGetRowUnencodableAnswers500: an account row whose plan_until has no
// JSON form (past the year 9999, as an invoice with such a period left it
// on PostgreSQL) is answered 500 with an error body, and the error logged,
// not 200 with an empty body that a client takes for success.
func TestGetRowUnencodableAnswers500(t *testing.T) {
	t.Parallel()
	svc := newStore(t, "postgres")
	_, err := svc.accounts.(pgAccounts).pool.Exec(t.Context(),
		`INSERT INTO accounts (id, credits, receipts, plan_until) VALUES ('acct_far', 100, 1, '248073-08-08 17:37:31+00')`)
	require.NoError(t, err)
	var logs syncBuffer
	svc.mailer = newMailer(slog.New(slog.DiscardHandler))
	srv, err := newServer(svc, []string{secret}, slog.New(slog.NewTextHandler(&logs, nil)), false, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := client{t: t, url: ts.URL}

	status, body := c.get("/accounts/acct_far")
	require.Equal(t, http.StatusInternalServerError, status, body)
	require.JSONEq(t, `{"error":"internal_error"}`, body)
	require.Contains(t, logs.String(), `msg="answering account"`)
	require.Contains(t, logs.String(), "year outside of range")
}
