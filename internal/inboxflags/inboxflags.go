// Package inboxflags checks the -lease and -attempt-timeout flags of the
// project's commands (examples/server, and the chaos run that passes
// them to it) as the inbox checks them, with errors naming the flags.
package inboxflags

import (
	"fmt"
	"time"

	"github.com/seed-a84bb619/idempotency"
)

// Check refuses a -lease and an -attempt-timeout (InboxConfig.Lease and
// Timeout) that the inbox would not run with: by NewInbox's own check (a
// negative value, a lease not a second longer than the timeout, a
// timeout past its range), its reason after the flags' names, and 0,
// which InboxConfig would read as its default rather than the value
// asked for.
func Check(lease, attemptTimeout time.Duration) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"lease", lease}, {"attempt-timeout", attemptTimeout}} {
		if f.d == 0 {
			return fmt.Errorf("-%s must be positive, got %s", f.name, f.d)
		}
	}
	cfg := idempotency.InboxConfig{Lease: lease, Timeout: attemptTimeout}
	if _, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), cfg); err != nil {
		return fmt.Errorf("-lease (InboxConfig.Lease) and -attempt-timeout (InboxConfig.Timeout): %v", err)
	}
	return nil
}
