package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An endpoint pinned to another release train than Config.APIVersion
// (2024-06-20 or 2025-09-30.clover beside stripe-go v82's basil): the
// warning said "Pin the endpoint to Config.APIVersion", and the
// StrictAPIVersion refusal said nothing of a cure. An endpoint's version
// cannot be changed in place: both say to make a second endpoint at
// Config.APIVersion and delete the old one once it delivers.
func TestAPIVersionMismatchSaysHowToMoveTheEndpoint(t *testing.T) {
	t.Parallel()
	const cure = "make a second endpoint at Config.APIVersion, with both secrets in Config.Secrets, and delete the old one once the new one delivers; or set Config.APIVersion to the endpoint's"
	for _, version := range []string{"2024-06-20", "2025-09-30.clover"} {
		payload := idempotencytest.Derive(eventPayload(t, "invoice.paid", "evt_cure_"+version, map[string]string{"account_id": "acct_1"}),
			map[string]any{"api_version": version})

		b := newBench(t, idempotency.Config{}, nil)
		b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret))
		require.Contains(t, b.logs.String(), cure, version)
		require.NotContains(t, b.logs.String(), "Pin the endpoint", version)

		strict := newBench(t, idempotency.Config{StrictAPIVersion: true}, nil)
		rec := strict.serve(idempotencytest.NewSignedRequest("/", payload, testSecret))
		require.Equal(t, 400, rec.Code, version)
		err := strict.lastResult(t).Err
		require.ErrorIs(t, err, idempotency.ErrAPIVersionMismatch, version)
		require.ErrorContains(t, err, cure, version)
	}
}
