package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailerDoesNotFollowRedirects: a provider answering a redirect has
// not sent the email. Followed, a 302 turned the POST into a GET of the
// new location, whose 200 counted as sent (and a 307 re-POSTed the email
// and its key to wherever it pointed); the redirect is an error, retried
// by the task, and nothing is requested from its location.
func TestMailerDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
	}))
	t.Cleanup(elsewhere.Close)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/login", code)
		}))
		t.Cleanup(ts.Close)
		m := newMailer(slog.New(slog.NewTextHandler(io.Discard, nil))).postingTo(ts.URL + "/send")
		err := m.Send(context.Background(), "send-receipt:abc", Email{To: "acct_1", Subject: "s", Body: "b"})
		require.ErrorContains(t, err, "answered ", code)
		require.NotContains(t, err.Error(), elsewhere.URL, code)
	}
	require.Zero(t, followed.Load(), "the redirect's location was requested")
}
