package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveByAccount: redrive -account redrives one connected account's
// events (after it reconnected, its dead letters and no other account's);
// -object those of an object, under every account and the platform's
// unless -account too; each is a selector, and -dry-run counts what the
// redrive moves. -kind task with either is refused (a task has neither),
// and so is -all beside them, each exit 2; -state ignored still needs
// -type or -id; a value that is not text is refused naming the field, and
// an -id of another account says why it is not moved. Nothing moves on a
// refusal. There was no -account or -object.
func TestRedriveByAccount(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	events := []struct{ id, account, object string }{
		{"evt_acc_a", "acct_A", "ch_shared"},
		{"evt_acc_b", "acct_B", "ch_shared"},
		{"evt_acc_b2", "acct_B", "ch_b"},
		{"evt_acc_p", "", "ch_shared"},
	}
	for _, e := range events {
		require.Equal(t, idempotency.OutcomeQueued, s.deliverRaw(t, accountEventPayload(t, e.id, "charge.failed", e.object, e.account, s.clock().Unix())))
	}
	s.work(t, s.dead)
	states := func() map[string]idempotency.InboxState {
		t.Helper()
		out := map[string]idempotency.InboxState{}
		for _, e := range events {
			out[e.id] = s.lookup(t, e.id).State
		}
		return out
	}
	want := map[string]idempotency.InboxState{}
	for _, e := range events {
		want[e.id] = idempotency.InboxDeadLetter
	}
	require.Equal(t, want, states())

	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"-account", "acct_A"}, 1},
		{[]string{"-account", "acct_B"}, 2},
		{[]string{"-object", "ch_shared"}, 3},
		{[]string{"-object", "ch_shared", "-account", "acct_B"}, 1},
		{[]string{"-account", "acct_C"}, 0},
	} {
		r := idemctl(t, s.db, nil, append([]string{"redrive", "-dry-run", "-json"}, c.args...)...)
		require.Equal(t, exitOK, r.code, "%v: %s", c.args, r.stderr)
		require.Equal(t, redriveJSON{Events: c.n, DryRun: true, NotRedriven: []notRedriven{}}, decode[redriveJSON](t, r), c.args)
	}
	require.Equal(t, want, states(), "a dry run moves nothing")

	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-kind", "task", "-account", "acct_A"}, exitUsage, "idemctl: redrive: -kind task with -account: a task has no account; -account and -object redrive events\n"},
		{[]string{"-kind", "task", "-object", "ch_shared"}, exitUsage, "idemctl: redrive: -kind task with -object: a task has no object; -account and -object redrive events\n"},
		{[]string{"-all", "-account", "acct_A"}, exitUsage, "idemctl: redrive: -all redrives every dead_letter event and task: it takes no -id, -type, -object, -account, -since or -until\n"},
		{[]string{"-state", "ignored", "-account", "acct_A"}, exitUsage, "idemctl: redrive: -state ignored needs -type or -id: "},
		{[]string{"-account", "acct_\xff"}, exitUsage, "RedriveFilter.Account"},
		{[]string{"-object", "ch_\x00"}, exitUsage, "RedriveFilter.ObjectID"},
	} {
		r := idemctl(t, s.db, nil, append([]string{"redrive"}, c.args...)...)
		require.Equal(t, c.code, r.code, "%q: %s", c.args, r.stdout)
		require.Contains(t, r.stderr, c.stderr, c.args)
		require.Empty(t, r.stdout, c.args)
	}
	require.Equal(t, want, states(), "a refused redrive moves nothing")

	r := idemctl(t, s.db, nil, "redrive", "-id", "evt_acc_b2,evt_acc_a", "-account", "acct_A")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "evt_acc_b2: not redriven: not of -account acct_A\n"+
		"redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	want["evt_acc_a"] = idempotency.InboxPending
	require.Equal(t, want, states())

	r = idemctl(t, s.db, nil, "redrive", "-object", "ch_shared", "-account", "acct_B")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	want["evt_acc_b"] = idempotency.InboxPending
	require.Equal(t, want, states(), "acct_B's event of the object, not its other one")

	r = idemctl(t, s.db, nil, "redrive", "-object", "ch_shared")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout, "the platform's, the others pending already")
	want["evt_acc_p"] = idempotency.InboxPending
	require.Equal(t, want, states())

	help := idemctl(t, nil, nil, "redrive", "-h")
	text := strings.Join(strings.Fields(help.stdout+help.stderr), " ")
	require.Contains(t, text, "-account acct_... redrives one connected account's events")
	require.Contains(t, text, "-object id redrives the events of one object")
}
