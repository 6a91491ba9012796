package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesAMalformedDatabaseURL: a -database-url or DATABASE_URL
// that is not a connection string is a refused value, as the other flags'
// are (exit 2), named where it came from, and never quoted. It exited 1,
// as the database's own failures do, as "database: not a PostgreSQL
// connection string".
func TestRunRefusesAMalformedDatabaseURL(t *testing.T) {
	t.Parallel()
	const malformed = "postgres://app:hunter2@db:notaport/app"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-database-url", malformed}, nil, "-database-url: not a PostgreSQL connection string: "},
		{nil, map[string]string{"DATABASE_URL": malformed}, "DATABASE_URL: not a PostgreSQL connection string: "},
	} {
		err := runRefused(t, append([]string{"-secret", secret}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, "invalid port")
		require.NotContains(t, err.Error(), "hunter2")
		var usage *usageError
		require.ErrorAs(t, err, &usage, "exits 2")
	}
}
