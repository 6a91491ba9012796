package main

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestServerMode: -mode live answers a test-mode delivery 400 and credits
// nothing, and applies a live one; a -mode that is neither live nor test,
// or a STRIPE_SECRET_KEY of the other mode, is refused at start (exit 2).
// The flag did not exist.
func TestServerMode(t *testing.T) {
	t.Parallel()
	c := startServer(t, "-mode", "live")
	test := invoiceEvent(t, "invoice.paid", "evt_mode_test", "acct_mode")
	status, body := c.deliver(test)
	require.Equal(t, http.StatusBadRequest, status)
	require.JSONEq(t, `{"error":"invalid_event"}`, body)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(invoiceEvent(t, "invoice.paid", "evt_mode_live", "acct_mode"), &ev))
	ev["livemode"] = true // the event's; its invoice's stays, as the handler reads none
	live, err := json.Marshal(ev)
	require.NoError(t, err)
	c.deliverAll(idempotency.OutcomeProcessed, live)

	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-mode", "Live"}, nil, `-mode must be live or test, got "Live"`},
		{[]string{"-mode", "live"}, map[string]string{"STRIPE_SECRET_KEY": "rk_test_mode_0123"}, "-mode live, and STRIPE_SECRET_KEY is a test-mode key: use a key of the endpoint's mode"},
	} {
		err := runRefused(t, append([]string{"-secret", secret}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "rk_test_mode_0123")
		var usage *usageError
		require.ErrorAs(t, err, &usage, "exits 2")
	}
}
