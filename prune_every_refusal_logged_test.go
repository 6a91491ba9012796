package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPruneEveryRefusalLogged: the README starts PruneEvery with `go`,
// which drops what it returns. A Retention that breaks a rule, or an
// interval under a minute, made every replica return at once and never
// prune, with no line in the logger it was given: the tables grew with
// nothing to say why. The refusal is logged at Error, naming the rule. A
// Retention with DryRun set, which would never delete anything, is
// refused as well.
func TestPruneEveryRefusalLogged(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		r        idempotency.Retention
		interval time.Duration
		want     string
	}{
		"retention": {idempotency.Retention{Guards: 45 * 24 * time.Hour}, time.Hour, "Retention.Guards"},
		"interval":  {idempotency.Retention{}, 30 * time.Second, "under a minute"},
		"dry run":   {idempotency.Retention{DryRun: true}, time.Hour, "Retention.DryRun"},
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			// Bounded: a loop that ran instead of refusing fails here
			// rather than running until the suite's timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := idempotency.PruneEvery(ctx, idempotency.NewMemoryStore(), c.r, c.interval, logger)
			require.ErrorContains(t, err, c.want)
			require.Contains(t, log.String(), "level=ERROR", "the refusal reaches the logger")
			require.Contains(t, log.String(), c.want)
		})
	}
}
