package idempotencyotel_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestDocTablesListEveryMetric: every metric a Telemetry reports, after
// a delivery and an attempt with its inbox observed, is a row of the
// package doc's table (its OpenTelemetry name) and of the README's (the
// name Prometheus's exporter writes: dots as underscores, _seconds for
// seconds, _total for a counter). The package doc once left out
// idempotency.inbox.running, the gauge the README's alert that no worker
// runs reads.
func TestDocTablesListEveryMetric(t *testing.T) {
	t.Parallel()
	in, h, _, tel := observedInbox(t, idempotency.NewMemoryStore())
	a := idempotencytest.Deliver(h, event(t, "evt_doc_tables", "invoice.paid", "in_1"), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	src, err := os.ReadFile("otel.go")
	require.NoError(t, err)
	docRows := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\t(idempotency\.[a-z_.]+) `).FindAllStringSubmatch(string(src), -1) {
		docRows[m[1]] = true
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readmeRows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(idempotency_[a-z_]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		readmeRows[m[1]] = true
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(t.Context(), &rm))
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen++
			require.True(t, docRows[m.Name], "%s is not in the package doc's table", m.Name)
			prom := strings.ReplaceAll(m.Name, ".", "_")
			if m.Unit == "s" && !strings.HasSuffix(prom, "_seconds") {
				prom += "_seconds"
			}
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && sum.IsMonotonic {
				prom += "_total"
			}
			require.True(t, readmeRows[prom], "%s (%s) is not in the README's table", prom, m.Name)
		}
	}
	require.GreaterOrEqual(t, seen, 9, "the metrics collected: the deliveries', the attempts', the inbox's gauges, the prunes' and dead letters' counters")
}
