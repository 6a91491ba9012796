package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dashboardGet fetches the dashboard's overview with the basic-auth
// credentials given (none when user is empty).
func dashboardGet(t *testing.T, c client, user, password string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url+dashboardPath, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

func TestDashboardBehindBasicAuth(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{nil, {"-inbox"}} {
		c := startServer(t, append([]string{"-dashboard", "-dashboard-password", "s3cret"}, mode...)...)
		status, h, _ := dashboardGet(t, c, "", "")
		require.Equal(t, http.StatusUnauthorized, status, mode)
		require.Contains(t, h.Get("WWW-Authenticate"), "Basic")
		status, _, _ = dashboardGet(t, c, dashboardUser, "wrong")
		require.Equal(t, http.StatusUnauthorized, status, mode)
		status, _, _ = dashboardGet(t, c, "root", "s3cret")
		require.Equal(t, http.StatusUnauthorized, status, mode)

		status, _, body := dashboardGet(t, c, dashboardUser, "s3cret")
		require.Equal(t, http.StatusOK, status, mode)
		require.Contains(t, body, "<h1>Overview</h1>")
		require.Contains(t, body, `action="search"`, "relative links under /admin/webhooks/")

		// The service's own routes are as they were.
		status, _ = c.get("/healthz")
		require.Equal(t, http.StatusOK, status)
	}
}

func TestDashboardOffByDefault(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	status, _, _ := dashboardGet(t, c, dashboardUser, "")
	require.Equal(t, http.StatusNotFound, status)
}

func TestDashboardNeedsAPassword(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	err := runRefused(t, []string{"-secret", secret, "-dashboard"}, noEnv, &stderr)
	require.ErrorContains(t, err, "-dashboard needs -dashboard-password")
}

// TestUsageHidesSecrets: -h, and the usage a bad flag prints, show no value
// from the environment: the webhook secret, the database URL and the
// dashboard's password are read from it after parsing, and are not the
// flags' defaults; they still apply when their flag is not given.
func TestUsageHidesSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"STRIPE_WEBHOOK_SECRET": "whsec_from_env_0123",
		"DATABASE_URL":          "postgres://app:db-pw-0123@127.0.0.1:1/app",
		"DASHBOARD_PASSWORD":    "dash-pw-0123",
	}
	getenv := func(k string) string { return env[k] }
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}} {
		var stderr strings.Builder
		err := run(t.Context(), args, getenv, &stderr, nil)
		require.Error(t, err, args)
		require.Contains(t, stderr.String(), "-dashboard-password", "usage was printed")
		for _, v := range env {
			require.NotContains(t, stderr.String(), v, args)
		}
		require.NotContains(t, stderr.String(), "0123", args)
	}

	c := startServerEnv(t, map[string]string{"DASHBOARD_PASSWORD": "dash-pw"}, io.Discard, "-dashboard")
	status, _, _ := dashboardGet(t, c, dashboardUser, "dash-pw")
	require.Equal(t, http.StatusOK, status, "the password from the environment")
}
