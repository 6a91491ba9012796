package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestConfigAPIVersionBeforeReleaseTrains: an endpoint pinned to a version
// from before release trains (2024-09-30.acacia), such as 2024-06-20, is
// what a service moving onto the library often has. Config.APIVersion
// takes it, as the FAQ tells the user to set it, and under
// StrictAPIVersion its events pass, while every other version (each such
// version had breaking changes) is the mismatch.
func TestConfigAPIVersionBeforeReleaseTrains(t *testing.T) {
	t.Parallel()
	requireStrictPassesOnly(t, "2024-06-20", "2023-10-16", "2024-09-30.acacia", stripe.APIVersion)

	// A date from the release trains on, without its train, is still no
	// Stripe API version, nor is a date before them with a train (one
	// written for 2023-10-16 would take every acacia event as its own).
	for _, bad := range []string{"2024-09-30", "2025-08-27", "2023-10-16.acacia", "2024-09-29.acacia", "2024-06-20.basil"} {
		_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
			idempotency.Config{Secrets: []string{testSecret}, APIVersion: bad})
		require.ErrorContains(t, err, "Config.APIVersion", bad)
	}
}
