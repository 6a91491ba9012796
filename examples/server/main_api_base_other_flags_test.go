package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAPIBaseWithoutKeyRefusedAmongOtherFlags: -stripe-api-base without
// STRIPE_SECRET_KEY is refused also beside a flag that sorts after it
// (-workers; flag.Visit goes in lexical order): what is asked is whether
// any flag set is -stripe-api-base, not whether the last one is.
func TestAPIBaseWithoutKeyRefusedAmongOtherFlags(t *testing.T) {
	t.Parallel()
	err := runRefused(t, []string{"-secret", secret, "-stripe-api-base", "http://127.0.0.1:12111", "-workers", "4"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "-stripe-api-base needs STRIPE_SECRET_KEY")
	var usage *usageError
	require.ErrorAs(t, err, &usage, "exits 2")
}
