package pgconfig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseURLWithAtAfterHostRefused: a '/' or '?' in a URL's password
// ends its user information at the password's first '@': the rest of
// the password was read as the host, a database name and parameters,
// looked up in DNS and printed in the connection's error
// ("failed to connect to `user=app database=tail-pw@db/app`: ... lookup
// rEt-pw ..."). A URL with an '@' after its host is refused, saying to
// write those characters escaped, without quoting it.
func TestParseURLWithAtAfterHostRefused(t *testing.T) {
	t.Parallel()
	for _, connString := range []string{
		"postgres://app:s3c@rEt-pw/tail-pw@db/app",
		"postgresql://app:s3c@rEt-pw?tail-pw@db/app",
		"postgres://app:s3c@rEt-pw/tail-pw@db/app?sslmode=disable",
	} {
		_, err := Parse(connString)
		require.ErrorContains(t, err, "not a PostgreSQL connection string: an '@' after the host", connString)
		require.NotContains(t, err.Error(), "-pw", connString)
	}
	cfg, err := Parse("postgres://app:s3c%40rEt-pw%2Ftail-pw@db/app")
	require.NoError(t, err)
	require.Equal(t, "s3c@rEt-pw/tail-pw", cfg.ConnConfig.Password)
	require.Equal(t, "db", cfg.ConnConfig.Host)
	cfg, err = Parse("postgres://app:pw@db/app?application_name=billing%40eu")
	require.NoError(t, err)
	require.Equal(t, "billing@eu", cfg.ConnConfig.RuntimeParams["application_name"])
	cfg, err = Parse("host=db user=app password=s3c@rEt/pw dbname=app")
	require.NoError(t, err)
	require.Equal(t, "s3c@rEt/pw", cfg.ConnConfig.Password)
}

// TestParseURLWithAtInHostRefused: pgx, as libpq, ends a URL's user
// information at its first '@', so that a password with an '@' and no
// '/' or '?' had its end read as the host ("ret-pw@db"), looked up in
// DNS and printed in the connection's error. A URL with more than one
// '@' before its host ends is refused, saying to write an '@' %40,
// without quoting it.
func TestParseURLWithAtInHostRefused(t *testing.T) {
	t.Parallel()
	for _, connString := range []string{
		"postgres://app:s3c@rEt-pw@db/app",
		"postgresql://app:s3c@rEt-pw@db",
		"postgres://app:s3c@rEt-pw@db:5432,db2:5432/app?sslmode=disable",
	} {
		_, err := Parse(connString)
		require.ErrorContains(t, err, "not a PostgreSQL connection string: an '@' in the host", connString)
		require.NotContains(t, err.Error(), "-pw", connString)
	}
	cfg, err := Parse("postgres://app:s3c%40rEt-pw@db/app")
	require.NoError(t, err)
	require.Equal(t, "s3c@rEt-pw", cfg.ConnConfig.Password)
	require.Equal(t, "db", cfg.ConnConfig.Host)
	cfg, err = Parse("postgres://app:pw@[::1]:5432/app")
	require.NoError(t, err)
	require.Equal(t, "::1", cfg.ConnConfig.Host)
}
