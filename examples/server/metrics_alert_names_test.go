package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAlertRulesReadServedMetrics: every metric the README's alert rules
// read is served under that name by -metrics-addr in inbox mode once an
// event was attempted, dead letters counted from 0: a rule on a name the
// exporter does not write would never fire.
func TestAlertRulesReadServedMetrics(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, rules, ok := strings.Cut(string(readme), "```promql\n")
	require.True(t, ok, "the README's alert rules")
	rules, _, ok = strings.Cut(rules, "```")
	require.True(t, ok)
	var names []string
	for _, n := range regexp.MustCompile(`idempotency_[a-z_]+`).FindAllString(rules, -1) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	require.Len(t, names, 6, "the metrics the rules read: %q", names)

	logs := newLogWatch("serving metrics")
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret}
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-inbox", "-metrics-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, logs)
	m := regexp.MustCompile(`msg="serving metrics" url=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "no metrics address in the log:\n%s", logs)
	c := client{t: t, url: "http://" + addr}
	status, body := c.deliver(invoiceEvent(t, "invoice.paid", "evt_alert_names", "acct_alert_names"))
	require.Equal(t, 200, status, body)

	scrape := client{t: t, url: m[1]}
	var page string
	require.Eventually(t, func() bool { // the workers attempt the event
		_, page = scrape.get("")
		return strings.Contains(page, "\nidempotency_inbox_last_attempt_age_seconds")
	}, 30*time.Second, 20*time.Millisecond)
	for _, n := range names {
		require.Regexp(t, `(?m)^`+n+`(\{[^}]*\})? `, page, "the alert rules read %s", n)
	}
	require.NoError(t, stop())
}
