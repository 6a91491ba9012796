package idempotency

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPgxSchemaErrorText: NewPgxStore refuses a PgxConfig.Schema no store
// can keep with ErrInvalidKey, in a text that names the package once, as
// every other refusal of the package does.
func TestPgxSchemaErrorText(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]string{
		"bill\x00ing": "idempotency: invalid key: PgxConfig.Schema contains a NUL byte",
		"bill\xffing": "idempotency: invalid key: PgxConfig.Schema is not valid UTF-8",
	} {
		_, err := NewPgxStore(noBeginner{}, PgxConfig{Schema: schema})
		require.ErrorIs(t, err, ErrInvalidKey, "%q", schema)
		require.EqualError(t, err, want, "%q", schema)
	}
}
