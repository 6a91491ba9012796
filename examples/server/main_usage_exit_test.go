package main

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

// TestMainUsageErrorsExitTwo: a flag, a flag's value, an argument or an
// environment variable that the command refuses is reported once and
// exits 2, as flag.ExitOnError's commands and idemctl do; one that the
// flag package refuses comes with the usage. A flag the flag package
// refused was printed twice (its line, then "server: " and the same), and
// every refusal exited 1, as a failure does.
func TestMainUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		usage bool // the flag package refused it: the usage follows
	}{
		{"unknown flag", []string{"-no-such-flag"}, "flag provided but not defined: -no-such-flag", true},
		{"unparsed value", []string{"-db-wait=soon"}, `invalid value "soon" for flag -db-wait`, true},
		{"value out of bounds", []string{"-secret", secret, "-db-wait=0s"}, "-db-wait must be positive", false},
		{"stray argument", []string{"-secret", secret, "-inbox", "true"}, `unexpected argument "true"`, false},
		{"no secret", nil, "no webhook signing secret", false},
		{"dashboard without password", []string{"-secret", secret, "-dashboard"}, "-dashboard needs -dashboard-password", false},
		{"recovery without key", []string{"-secret", secret, "-recover-since=1h"}, "-recover-since needs STRIPE_SECRET_KEY", false},
		{"API base without key", []string{"-secret", secret, "-stripe-api-base", "ftp://stripe.test"}, "-stripe-api-base needs STRIPE_SECRET_KEY", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stderr := mainExit(t, append([]string{"-addr=127.0.0.1:0"}, tc.args...)...)
			require.Equal(t, 2, code, "exit status of %q:\n%s", tc.args, stderr)
			require.Equal(t, 1, strings.Count(stderr, tc.want), "reported once:\n%s", stderr)
			if tc.usage {
				require.Contains(t, stderr, "Usage of server")
			} else {
				require.Equal(t, "server: "+tc.want, stderr[:len("server: ")+len(tc.want)], "one line, first:\n%s", stderr)
				require.NotContains(t, stderr, "Usage of server")
			}
		})
	}
	// The Stripe key is read from the environment alone; it and
	// -stripe-api-base are refused as the flags are.
	for _, tc := range []struct {
		key, base, want string
	}{
		{"not_a_key", stripe.APIURL, "STRIPE_SECRET_KEY is not a secret"},
		{"rk_test_1", "ftp://stripe.test", "-stripe-api-base"},
	} {
		env := map[string]string{"STRIPE_SECRET_KEY": tc.key}
		err := runRefused(t, []string{"-secret", secret, "-stripe-api-base", tc.base}, func(k string) string { return env[k] }, io.Discard)
		require.ErrorContains(t, err, tc.want)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "exits 2")
	}
}
