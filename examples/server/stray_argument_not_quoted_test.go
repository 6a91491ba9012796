package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunStrayArgumentNotQuoted: a stray argument is quoted in the error
// only when it is a bool flag's value ("-inbox true"); any other may be
// part of a secret, as the second of "-secret whsec_a, whsec_b" left
// unquoted in the shell is, and the error, which goes to the service's
// log, used to print it whole.
func TestRunStrayArgumentNotQuoted(t *testing.T) {
	t.Parallel()
	err := runRefused(t, []string{"-secret", "whsec_first,", "whsec_second_secret"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "unexpected argument")
	require.NotContains(t, err.Error(), "whsec_second_secret")
	var usage *usageError
	require.ErrorAs(t, err, &usage, "exits 2")
}
