package pgconfig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseNeverQuotesThePassword: whatever is wrong with a connection
// string, the error gives pgx's reason and not the string, whose password
// pgx masks only when it recognises it.
func TestParseNeverQuotesThePassword(t *testing.T) {
	t.Parallel()
	for connString, reason := range map[string]string{
		"host=db user=app password = s3cret-pw port=x":           "invalid port",
		"host=db user=app password= s3cret-pw port=x":            "invalid port",
		"host=db user=app password = 's3cret-pw' port=x":         "invalid port",
		"host=db password=s3cret-pw port=x":                      "invalid port",
		"host=db password='s3cret-pw":                            "failed to parse as keyword/value",
		"host=db user=app password=correct s3cret-pw port=5432":  "failed to parse as keyword/value",
		"postgres://app:s3cret-pw@db:notaport/app":               "invalid port",
		"postgres://app:s3cret-pw@[::1/app":                      "failed to parse as URL",
		"postgres://app:s3c%40ret-pw@db/app?sslmode=bogus":       "failed to configure TLS",
		"postgres://app:s3cret-pw@db/app?pool_max_conns=x":       "pool_max_conns",
		"postgres://app@db/app?password=s3cret-pw&sslmode=bogus": "failed to configure TLS",
	} {
		_, err := Parse(connString)
		require.Error(t, err, connString)
		require.ErrorContains(t, err, "not a PostgreSQL connection string: ", connString)
		require.ErrorContains(t, err, reason, connString)
		require.NotContains(t, err.Error(), "s3c", connString)
		require.NotContains(t, err.Error(), "ret-pw", connString)
		require.NotContains(t, err.Error(), "(", "%s: the error of the step that failed may quote the string", connString)
	}
	cfg, err := Parse("postgres://app:s3cret-pw@db:5433/app?pool_max_conns=7")
	require.NoError(t, err)
	require.EqualValues(t, 7, cfg.MaxConns)
	require.Equal(t, "s3cret-pw", cfg.ConnConfig.Password)
	require.EqualValues(t, 5433, cfg.ConnConfig.Port)
}
