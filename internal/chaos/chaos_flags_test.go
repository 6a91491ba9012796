package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChaosRefusesBadFlags: a flag's value that cannot make a run exits 2
// with one line naming the flag, before anything starts.
func TestChaosRefusesBadFlags(t *testing.T) {
	t.Parallel()
	// Cancelled: a value let through by mistake fails at once, rather
	// than making a run.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"-n", "0"}, "-n must be at least 1"},
		{[]string{"-c", "0"}, "-c must be between 1 and 1000"},
		{[]string{"-c", "1001"}, "-c must be between 1 and 1000"},
		{[]string{"-workers", "0"}, "-workers must be between 1 and 1000"},
		{[]string{"-accounts", "0"}, "-accounts must be at least 1"},
		{[]string{"-dup", "1"}, "-dup must be at least 0 and below 1"},
		{[]string{"-dup", "NaN"}, "-dup must be at least 0 and below 1"},
		{[]string{"-twin", "-0.1"}, "-twin must be at least 0 and below 1"},
		{[]string{"-dup", "0.6", "-twin", "0.4"}, "-dup and -twin together must be below 1"},
		{[]string{"-fault-every", "10ms"}, "-fault-every must be 0 (no faults) or at least 100ms"},
		{[]string{"-fault-every", "-1s"}, "-fault-every must be 0 (no faults) or at least 100ms"},
		{[]string{"-drain-timeout", "0s"}, "-drain-timeout must be positive"},
		{[]string{"-retry-for", "0s"}, "-retry-for must be positive"},
		{[]string{"-lease", "0s"}, "-lease must be positive"},
		{[]string{"-attempt-timeout", "0s"}, "-attempt-timeout must be positive"},
		{[]string{"-lease", "3s", "-attempt-timeout", "3s"}, "-lease (InboxConfig.Lease) and -attempt-timeout (InboxConfig.Timeout): idempotency: InboxConfig.Lease (3s) must exceed Timeout (3s) by 1s at least"},
		{[]string{"-lease", "-5s"}, "-lease (InboxConfig.Lease) and -attempt-timeout (InboxConfig.Timeout): idempotency: InboxConfig.Lease is negative (-5s)"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-database-url", "postgres://u:s3cret@localhost:port/db"}, "-database-url: not a PostgreSQL connection string"},
		{[]string{"-pgbouncer", "-database-url", "postgres://u:s3cret@localhost/db"}, "-pgbouncer runs PgBouncer in front of the throwaway cluster: not with -database-url"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, tc.args, &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr.String())
		require.True(t, strings.HasPrefix(stderr.String(), "chaos: "+tc.flag), "%v: %s", tc.args, stderr.String())
		require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%v: one line: %s", tc.args, stderr.String())
		require.Empty(t, stdout.String(), "%v: nothing starts", tc.args)
		require.NotContains(t, stderr.String(), "s3cret")
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(ctx, []string{"-bogus"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "flag provided but not defined: -bogus")
	require.Contains(t, stderr.String(), "usage: go run ./internal/chaos")
}
