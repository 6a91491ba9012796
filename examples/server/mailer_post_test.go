package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailerPostsWithTheIdempotencyKey: with -mail-url the receipt email
// is POSTed as JSON with the task's key in the Idempotency-Key header,
// and an answer other than a 2xx is an error (the task retries it) that
// names neither the URL nor the email.
func TestMailerPostsWithTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	type got struct {
		key   string
		email map[string]string
	}
	var (
		mu     sync.Mutex
		seen   []got
		status = http.StatusOK
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e map[string]string
		_ = json.NewDecoder(r.Body).Decode(&e)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, got{r.Header.Get("Idempotency-Key"), e})
		w.WriteHeader(status)
	}))
	t.Cleanup(ts.Close)
	m := newMailer(slog.New(slog.NewTextHandler(io.Discard, nil))).postingTo(ts.URL + "/send?token=tok_secret")
	email := Email{To: "acct_1", Subject: "Receipt for invoice in_1", Body: "Paid: 2000 usd."}

	require.NoError(t, m.Send(context.Background(), "send-receipt:abc", email))
	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	err := m.Send(context.Background(), "send-receipt:abc", email)
	require.ErrorContains(t, err, "answered 500")
	require.NotContains(t, err.Error(), "tok_secret")
	require.NotContains(t, err.Error(), "in_1")

	ts.Close()
	err = m.Send(context.Background(), "send-receipt:abc", email)
	require.Error(t, err, "the provider is down")
	require.NotContains(t, err.Error(), "tok_secret")

	want := got{"send-receipt:abc", map[string]string{"to": "acct_1", "subject": "Receipt for invoice in_1", "body": "Paid: 2000 usd."}}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []got{want, want}, seen)
	emails, _ := m.Sent()
	require.Empty(t, emails, "a mailer with a URL keeps nothing")
}

// TestMailURLRefused: -mail-url takes an http or https URL with a host;
// anything else is refused at start, exit 2, without quoting it.
func TestMailURLRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"smtp://mail.example.com", "http://", "mail.example.com/send?key=sk_x", "http://[::1"} {
		err := runRefused(t, []string{"-secret", secret, "-mail-url", bad}, noEnv, io.Discard)
		require.ErrorContains(t, err, "-mail-url must be an http or https URL with a host", bad)
		require.NotContains(t, err.Error(), bad)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "exits 2")
	}
}
