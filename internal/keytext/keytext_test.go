package keytext_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/keytext"
)

func TestProblems(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value        string
		required     bool
		text, asAKey string
	}{
		{"evt_1", true, "", ""},
		{"", false, "", "is empty"},
		{"", true, "is empty", "is empty"},
		{"evt_\x00", false, "contains a NUL byte", "contains a NUL byte"},
		{"evt_\xff", false, "is not valid UTF-8", "is not valid UTF-8"},
		{strings.Repeat("x", keytext.MaxKeyLen), true, "", ""},
		{strings.Repeat("x", keytext.MaxKeyLen+1), true, "", "is 1025 bytes long (at most 1024)"},
	} {
		require.Equal(t, c.text, keytext.TextProblem(c.value, c.required), "%q", c.value)
		require.Equal(t, c.asAKey, keytext.KeyProblem(c.value), "%q", c.value)
	}
}
