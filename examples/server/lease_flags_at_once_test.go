package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesLeaseFlagsAtOnce: a -lease or -attempt-timeout that the
// inbox cannot take is refused before the database is tried, naming the
// flags (exit 2): zero, which InboxConfig would read as its default, by
// the server; a negative value, a lease not a second longer than the
// attempt timeout (the library's default lease with a longer timeout
// too), and a timeout past the library's range by NewInbox's own check,
// whose reason follows the flags' names.
func TestRunRefusesLeaseFlagsAtOnce(t *testing.T) {
	t.Parallel()
	const flags = "-lease (InboxConfig.Lease) and -attempt-timeout (InboxConfig.Timeout): "
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"zero lease", []string{"-lease=0"}, "-lease must be positive, got 0s"},
		{"zero attempt timeout", []string{"-attempt-timeout=0"}, "-attempt-timeout must be positive, got 0s"},
		{"negative lease", []string{"-lease=-1s"}, flags + "idempotency: InboxConfig.Lease is negative (-1s)"},
		{"negative attempt timeout", []string{"-attempt-timeout=-1s"}, flags + "idempotency: InboxConfig.Timeout is negative (-1s)"},
		{"lease equal to the timeout", []string{"-lease=3s", "-attempt-timeout=3s"},
			flags + "idempotency: InboxConfig.Lease (3s) must exceed Timeout (3s) by 1s at least"},
		{"lease under a second longer", []string{"-lease=3500ms", "-attempt-timeout=3s"},
			flags + "idempotency: InboxConfig.Lease (3.5s) must exceed Timeout (3s) by 1s at least"},
		{"default lease, longer timeout", []string{"-attempt-timeout=1m"},
			flags + "idempotency: InboxConfig.Lease (1m0s) must exceed Timeout (1m0s) by 1s at least"},
		{"timeout out of range", []string{"-attempt-timeout=2562047h47m16s"},
			flags + "idempotency: InboxConfig.Lease (1m0s) must exceed Timeout (2562047h47m16s) by 1s at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := refusedBeforeTheDatabase(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, tc.want, err.Error()[:len(tc.want)], "the flags first")
		})
	}
}
