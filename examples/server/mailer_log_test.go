package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailerLogsOneLinePerEmail: a request repeated with the same
// idempotency key sends nothing and logs no second "email sent", as the
// README says the service logs one per email.
func TestMailerLogsOneLinePerEmail(t *testing.T) {
	t.Parallel()
	logs := newLogWatch("email sent")
	m := newMailer(slog.New(slog.NewTextHandler(logs, nil)))
	e := Email{To: "acct_log", Subject: "Receipt for invoice in_log", Body: "Paid: 2000 usd."}
	require.NoError(t, m.Send(t.Context(), "key_log", e))
	require.NoError(t, m.Send(t.Context(), "key_log", e))
	require.Equal(t, 1, strings.Count(logs.String(), `msg="email sent"`), logs.String())
	require.Contains(t, logs.String(), "idempotency_key=key_log")
	require.NotContains(t, logs.String(), "acct_log", "nothing of the email itself")
	emails, requests := m.Sent()
	require.Equal(t, []Email{e}, emails)
	require.Equal(t, 2, requests)
}
