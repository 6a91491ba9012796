package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRunServesMetrics: with -metrics-addr, a delivery is counted in the
// Prometheus metrics served there, a refused one (a secret that is not the
// endpoint's) by the labels the README's alert on refusals reads, and so
// is the inbox's depth; the rows the prune (-prune-every, an hour by
// default, at once at start) deleted are counted from 0.
func TestRunServesMetrics(t *testing.T) {
	t.Parallel()
	logs := newLogWatch("serving metrics")
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret}
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, logs)
	// Logged before the webhook listens.
	m := regexp.MustCompile(`msg="serving metrics" url=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "no metrics address in the log:\n%s", logs)
	metricsURL := m[1]

	c := client{t: t, url: "http://" + addr}
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_metrics_1", "acct_metrics"))
	require.Equal(t, 200, status, body)
	c.deliver(invoiceEvent(t, "invoice.paid", "evt_metrics_1", "acct_metrics"))
	forged := idempotencytest.NewSignedRequest(c.url+"/webhook", invoiceEvent(t, "invoice.paid", "evt_metrics_2", "acct_metrics"), "whsec_not_the_endpoints")
	forged.RequestURI = ""
	status, _ = c.do(forged)
	require.Equal(t, 400, status)

	scrape := client{t: t, url: metricsURL}
	status, page := scrape.get("")
	require.Equal(t, 200, status)
	require.Regexp(t, `(?m)^idempotency_deliveries_total\{[^}]*outcome="processed"[^}]*status="200"[^}]*\} 1$`, page)
	require.Regexp(t, `(?m)^idempotency_deliveries_total\{[^}]*outcome="duplicate"[^}]*\} 1$`, page)
	require.Regexp(t, `(?m)^idempotency_deliveries_total\{[^}]*outcome="rejected"[^}]*status="400"[^}]*\} 1$`, page)
	require.Regexp(t, `(?m)^idempotency_delivery_duration_seconds_count\{[^}]*outcome="processed"[^}]*\} 1$`, page)
	require.Regexp(t, `(?m)^idempotency_inbox_depth\{[^}]*kind="event"[^}]*state="dead_letter"[^}]*\} 0$`, page)
	require.Regexp(t, `(?m)^idempotency_inbox_oldest_pending_age_seconds(\{[^}]*\})? `, page)
	require.Regexp(t, `(?m)^idempotency_retention_pruned_total\{[^}]*rows="events"[^}]*\} 0$`, page)
	require.NotContains(t, page, "acct_metrics", "no payload field in the metrics")
	require.NoError(t, stop())
}
