package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestHandlerToleranceOverRecoveryWindowRefused: a signature verifies for
// as long as Config.Tolerance, and an event's claim is kept 45 days at
// least (Retention.EventIDs): with a Tolerance longer than that, a
// delivery captured and sent again once its claim was pruned verified and
// was applied a second time. NewHandler and Inbox.Handler refuse a
// Tolerance over RecoveryWindow (30 days), well inside the claims'
// retention, and take RecoveryWindow itself.
func TestHandlerToleranceOverRecoveryWindowRefused(t *testing.T) {
	t.Parallel()
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), registry(), idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	makers := map[string]func(idempotency.Config) (*idempotency.Handler, error){
		"NewHandler": func(cfg idempotency.Config) (*idempotency.Handler, error) {
			return idempotency.NewHandler(idempotency.NewMemoryStore(), registry(), cfg)
		},
		"Inbox.Handler": inbox.Handler,
	}
	for name, newHandler := range makers {
		for _, tolerance := range []time.Duration{idempotency.RecoveryWindow + time.Second, 60 * 24 * time.Hour} {
			_, err := newHandler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Tolerance: tolerance})
			require.ErrorContains(t, err, "Config.Tolerance", "%s, Tolerance %s", name, tolerance)
			require.ErrorContains(t, err, "applied again", "%s, Tolerance %s: the error says why", name, tolerance)
		}
		_, err := newHandler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Tolerance: idempotency.RecoveryWindow})
		require.NoError(t, err, "%s: Tolerance RecoveryWindow", name)
	}
}
