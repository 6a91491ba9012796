package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRunFlagEdgesAccepted: the flags' documented bounds are inclusive:
// -prune-every 0 (off), -workers 10000, -ingest-workers equal to
// -workers and a -lease a second longer than -attempt-timeout pass the
// flag checks, which come before the signing secret's.
// Refused for the missing secret alone, no workers start.
func TestRunFlagEdgesAccepted(t *testing.T) {
	t.Parallel()
	err := runRefused(t, []string{"-inbox", "-prune-every=0", "-workers=10000", "-ingest-workers=10000", "-lease=4s", "-attempt-timeout=3s"}, noEnv, io.Discard)
	require.ErrorContains(t, err, "no webhook signing secret")
}

// TestRunSecretFlagOverEnvironment: -secret wins over
// STRIPE_WEBHOOK_SECRET; the environment fills only what the flags leave
// empty.
func TestRunSecretFlagOverEnvironment(t *testing.T) {
	t.Parallel()
	c := startServerEnv(t, map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_from_the_environment"}, io.Discard) // -secret secret
	c.deliverAll(idempotency.OutcomeProcessed, invoiceEvent(t, "invoice.paid", "evt_flag_secret", "acct_flag_secret"))
}
