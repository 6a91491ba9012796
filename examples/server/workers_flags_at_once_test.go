package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// unansweredDatabaseURL is a database nobody answers (nothing listens on
// port 1): start-up retries it for -db-wait.
const unansweredDatabaseURL = "postgres://app@127.0.0.1:1/app"

// refusedBeforeTheDatabase runs the server with args against
// unansweredDatabaseURL, which it must refuse before it tries the
// database, as a usage error (exit 2), and returns that error.
func refusedBeforeTheDatabase(t *testing.T, args ...string) error {
	t.Helper()
	stderr := newLogWatch(retryLogged)
	err := runRefused(t, append([]string{"-secret", secret, "-database-url", unansweredDatabaseURL, "-db-wait", "3s"}, args...), noEnv, stderr)
	var usage *usageError
	require.ErrorAs(t, err, &usage, "exits 2")
	require.NotContains(t, stderr.String(), retryLogged, "refused before the database was tried")
	return err
}

// TestRunRefusesWorkerCountsAtOnce: a -workers or -ingest-workers that the
// inbox cannot take is refused before the database is tried, naming the
// flag (exit 2). They reached the inbox only once the database was up,
// after up to -db-wait, named as its config fields (InboxConfig.Workers),
// and -workers 0 ran 8 workers.
func TestRunRefusesWorkerCountsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no workers", []string{"-workers=0"}, "-workers must be between 1 and 10000, got 0"},
		{"negative workers", []string{"-workers=-1"}, "-workers must be between 1 and 10000, got -1"},
		{"too many workers", []string{"-workers=10001"}, "-workers must be between 1 and 10000, got 10001"},
		{"negative ingest workers", []string{"-ingest-workers=-1"}, "-ingest-workers must be between 0 (half of -workers) and -workers (8), got -1"},
		{"more ingest workers than workers", []string{"-workers=2", "-ingest-workers=3"}, "-ingest-workers must be between 0 (half of -workers) and -workers (2), got 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := refusedBeforeTheDatabase(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "InboxConfig")
		})
	}
}
