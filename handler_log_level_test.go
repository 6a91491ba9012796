package idempotency_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerLogLevelPerOutcome: Config.Logger says processed and skipped
// deliveries log at Info, duplicates and ignored events at Debug (the
// copies Stripe sends of every event would otherwise double a service's
// Info logs), rejections at Warn.
func TestHandlerLogLevelPerOutcome(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	deliver := func(typ, id string, metadata map[string]string) {
		t.Helper()
		b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, typ, id, metadata), testSecret))
	}
	deliver("invoice.paid", "evt_lvl_processed", paid)
	deliver("invoice.paid", "evt_lvl_processed", paid)
	deliver("invoice.paid", "evt_lvl_skipped", nil)
	deliver("charge.refunded", "evt_lvl_ignored", nil)
	b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_lvl_rejected", paid), "whsec_another"))

	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(b.logs.String()))
	for sc.Scan() {
		var line struct {
			Msg, Level, Outcome string
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Msg == "stripe webhook" {
			require.NotContains(t, got, line.Outcome, "one delivery per outcome")
			got[line.Outcome] = line.Level
		}
	}
	require.Equal(t, map[string]string{
		"processed": "INFO", "duplicate": "DEBUG", "skipped": "INFO", "ignored": "DEBUG", "rejected": "WARN",
	}, got)
}
