package pgconfig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseURLWithHashRefused: a '#' in a URL starts its fragment, which
// pgx drops: "?password=s3c#ret-pw" connected with the password "s3c" and
// failed as a wrong password, and "app:s3c#ret-pw@db" was read as a host
// and a port. Such a URL is refused, saying to write %23, without quoting
// it; the keyword/value form keeps its '#'.
func TestParseURLWithHashRefused(t *testing.T) {
	t.Parallel()
	for _, connString := range []string{
		"postgres://app@db/app?password=s3c#ret-pw",
		"postgresql://app:s3c#ret-pw@db/app",
		"postgres://app@db/app?sslmode=disable#ret-pw",
	} {
		_, err := Parse(connString)
		require.ErrorContains(t, err, "not a PostgreSQL connection string: a '#' in a URL ends it (write %23)", connString)
		require.NotContains(t, err.Error(), "ret-pw", connString)
	}
	cfg, err := Parse("postgres://app@db/app?password=s3c%23ret-pw")
	require.NoError(t, err)
	require.Equal(t, "s3c#ret-pw", cfg.ConnConfig.Password)
	cfg, err = Parse("host=db user=app password=s3c#ret-pw")
	require.NoError(t, err)
	require.Equal(t, "s3c#ret-pw", cfg.ConnConfig.Password)
}
