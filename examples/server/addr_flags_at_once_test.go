package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesMalformedAddressesAtOnce: an -addr or -metrics-addr that
// no listener can take (no port, a port that is none) is refused before
// the database is tried, naming the flag (exit 2). Each was found by its
// listen, once the database was up, after up to -db-wait.
func TestRunRefusesMalformedAddressesAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no port", []string{"-addr", "localhost"}, `-addr "localhost": address localhost: missing port in address`},
		{"port out of range", []string{"-addr", "127.0.0.1:65536"}, `-addr "127.0.0.1:65536"`},
		{"metrics without port", []string{"-metrics-addr", "9090"}, `-metrics-addr "9090": address 9090: missing port in address`},
		{"metrics port not a port", []string{"-metrics-addr", ":metrics"}, `-metrics-addr ":metrics"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, refusedBeforeTheDatabase(t, tc.args...), tc.want)
		})
	}
}
