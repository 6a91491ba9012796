package inboxflags_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/inboxflags"
)

// TestCheckAcceptsWhatTheInboxRunsWith: the flags' defaults (the inbox's
// own, a minute and 30 s), a lease a second longer than the timeout, and
// a long pair are accepted.
func TestCheckAcceptsWhatTheInboxRunsWith(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lease, attemptTimeout time.Duration }{
		{idempotency.DefaultLease, idempotency.DefaultInboxTimeout},
		{2 * time.Second, time.Second},
		{5 * time.Second, 3 * time.Second},
		{3 * time.Minute, 2 * time.Minute},
		{time.Nanosecond + time.Second, time.Nanosecond},
	} {
		require.NoError(t, inboxflags.Check(c.lease, c.attemptTimeout), "-lease %s -attempt-timeout %s", c.lease, c.attemptTimeout)
	}
}

// TestCheckRefuses: 0 (which InboxConfig would read as its default), a
// negative value, a lease not a second longer than the timeout, and a
// timeout past its range are refused, naming the flags, with NewInbox's
// reason after them.
func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	const both = "-lease (InboxConfig.Lease) and -attempt-timeout (InboxConfig.Timeout): "
	for _, c := range []struct {
		name                  string
		lease, attemptTimeout time.Duration
		want                  string
	}{
		{"lease 0", 0, time.Second, "-lease must be positive, got 0s"},
		{"attempt timeout 0", time.Minute, 0, "-attempt-timeout must be positive, got 0s"},
		{"both 0", 0, 0, "-lease must be positive, got 0s"},
		{"negative lease", -time.Minute, time.Second, both + "idempotency: InboxConfig.Lease is negative (-1m0s)"},
		{"negative attempt timeout", time.Minute, -time.Second, both + "idempotency: InboxConfig.Timeout is negative (-1s)"},
		{"lease equal to the timeout", time.Minute, time.Minute, both + "idempotency: InboxConfig.Lease (1m0s) must exceed Timeout (1m0s) by 1s at least"},
		{"lease under a second longer", 2*time.Second - time.Nanosecond, time.Second, both + "idempotency: InboxConfig.Lease (1.999999999s) must exceed Timeout (1s) by 1s at least"},
		{"lease shorter", time.Second, time.Minute, both + "idempotency: InboxConfig.Lease (1s) must exceed Timeout (1m0s) by 1s at least"},
		{"timeout past its range", math.MaxInt64, math.MaxInt64, both + "idempotency: InboxConfig.Lease (2562047h47m16.854775807s) must exceed Timeout (2562047h47m16.854775807s) by 1s at least"},
		{"a timeout 60 s with the default lease", idempotency.DefaultLease, time.Minute, both + "idempotency: InboxConfig.Lease (1m0s) must exceed Timeout (1m0s) by 1s at least"},
	} {
		err := inboxflags.Check(c.lease, c.attemptTimeout)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
}
