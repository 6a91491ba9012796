package dashboard_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestDashboardNotMadeByNewIsRefused: a Dashboard that New did not return
// (a zero or nil one, declared where New's result was meant) answers
// every page and action 500 with a page that says so, under the
// dashboard's headers, with no link to the overview, which says the same,
// and logs it at Error through slog.Default, naming New: it panicked on a
// nil pointer at every request.
// Not parallel: it reads slog.Default, which it sets.
func TestDashboardNotMadeByNewIsRefused(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	for name, d := range map[string]*dashboard.Dashboard{"zero": {}, "nil": nil} {
		for _, r := range []*http.Request{
			httptest.NewRequest(http.MethodGet, "/", nil),
			httptest.NewRequest(http.MethodPost, "/redrive", strings.NewReader("id=evt_1")),
		} {
			var logs bytes.Buffer
			slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
			w := httptest.NewRecorder()
			require.NotPanics(t, func() { d.ServeHTTP(w, r) }, "%s %s %s", name, r.Method, r.URL)
			require.Equal(t, http.StatusInternalServerError, w.Code, name)
			require.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'", name)
			contains(t, w.Body.String(), "not made by dashboard.New", name)
			require.NotContains(t, w.Body.String(), `id="back-to-overview"`, "%s: every page of it says the same", name)
			require.Equal(t, 1, strings.Count(logs.String(), `level=ERROR msg="dashboard: a Dashboard not made by New"`),
				"one line for the request: %s", logs.String())
		}
	}
}
