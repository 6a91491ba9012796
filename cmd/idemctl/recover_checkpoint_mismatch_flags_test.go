package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverCheckpointMismatchNamesTheFlags: a -checkpoint continued
// with an earlier -since, other -types or -only-undelivered, or another
// -account is refused, exit 2, in recover's flags: each that differs, in
// the order of RecoverOptions' fields, with what the checkpoint was
// started with and what was given, and what to do. Nothing is requested,
// and the checkpoint still continues with its own options. The refusal of
// an earlier -since named RecoverOptions.Since, the library's field; one
// of every flag named the account alone.
func TestRecoverCheckpointMismatchNamesTheFlags(t *testing.T) {
	t.Parallel()
	s, api, srv, env, _, since, earlier := newCheckpointFixture(t, "cpm")
	args := []string{"recover", "-since", since, "-types", "invoice.paid", "-api-base", srv.URL, "-checkpoint", "cpm"}
	r := idemctl(t, s.db, env, args...)
	require.Equal(t, exitOK, r.code, r.stderr)
	requests := len(api.queries)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-since", earlier},
			`-checkpoint "cpm" was started with -since ` + since + `, not the earlier ` + earlier + `: run it with a -since at or after ` + since + `, or name another -checkpoint for these`},
		{[]string{"-types", "invoice.paid,charge.failed"},
			`-checkpoint "cpm" was started with -types invoice.paid, not -types charge.failed,invoice.paid: run it with those, or name another -checkpoint for these`},
		{[]string{"-only-undelivered"},
			`-checkpoint "cpm" was started without -only-undelivered, not with it:`},
		{[]string{"-account", "acct_cpm"},
			`-checkpoint "cpm" was started with the key's own account (without -account), not -account acct_cpm: run it with those, or name another -checkpoint for these (one per account)`},
		{[]string{"-since", earlier, "-types", "invoice.paid,charge.failed", "-only-undelivered", "-account", "acct_cpm"},
			`-checkpoint "cpm" was started with -since ` + since + `, not the earlier ` + earlier +
				`; with -types invoice.paid, not -types charge.failed,invoice.paid; without -only-undelivered, not with it; ` +
				`with the key's own account (without -account), not -account acct_cpm: ` +
				`run it with those (a -since at or after ` + since + `), or name another -checkpoint for these (one per account)`},
	} {
		r := idemctl(t, s.db, env, append(args, c.args...)...)
		require.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, "idemctl: recover: idempotency: recovery checkpoint started with other options: "+c.want, c.args)
		require.NotContains(t, r.stderr, "RecoverOptions", c.args)
		require.NotContains(t, r.stderr, "a Since", c.args)
	}
	require.Len(t, api.queries, requests, "nothing requested")

	r = idemctl(t, s.db, env, args...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^resumed\s+true$`, r.stdout)
	require.Regexp(t, `(?m)^checkpoint at\s+evt_cpm_0$`, r.stdout)

	help := idemctl(t, nil, nil, "recover", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "),
		"-checkpoint was started with other options (each that differs is named, with the checkpoint's value and the one given)")
}

// newCheckpointFixture is what a test of a -checkpoint's refusals needs:
// a service, a fake Events API listing one invoice.paid event of an hour
// ago (evt_<name>_0) and its server, recover's environment, and a -since
// two hours ago (start, whole seconds, and as a flag) with one an hour
// before it.
func newCheckpointFixture(t *testing.T, name string) (s *service, api *eventsAPI, srv *httptest.Server, env map[string]string, start time.Time, since, earlier string) {
	t.Helper()
	s = newService(t, nil)
	api = &eventsAPI{
		events: [][]byte{eventPayload(t, "evt_"+name+"_0", "invoice.paid", "in_"+name+"_0", time.Now().Add(-time.Hour).Unix())},
		types:  []string{"invoice.paid"},
	}
	srv = httptest.NewServer(api)
	t.Cleanup(srv.Close)
	start = time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	return s, api, srv, map[string]string{"STRIPE_SECRET_KEY": stripeKey}, start,
		start.Format(time.RFC3339), start.Add(-time.Hour).Format(time.RFC3339)
}
