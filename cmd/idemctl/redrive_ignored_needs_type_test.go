package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveIgnoredNeedsTypeOrID: with RecordIgnored the ignored events
// are also those of every type no release handles, so -state ignored
// (alone or beside another state) is refused, exit 2, saying why, unless
// -type or -id names what to redrive: -all, and -since or -until alone,
// would take those too, and -all beside -type or -id is refused for
// -all. Nothing moves; with -type it moves that type's.
func TestRedriveIgnoredNeedsTypeOrID(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ignt_created", "invoice.created", "in_ignt"))
	require.Equal(t, idempotency.OutcomeIgnored, s.deliver(t, "evt_ignt_final", "invoice.finalized", "in_ignt_final"))

	const why = "idemctl: redrive: -state ignored needs -type or -id: with RecordIgnored the ignored events are also " +
		"those of every type no release handles, and one redriven less than InboxConfig.RetryUnhandledFor (an hour) " +
		"after it was received fails until then, holding back the later events of its object\n"
	for _, args := range [][]string{
		{"-state", "ignored", "-all"},
		{"-state", "ignored", "-since", "1h"},
		{"-state", "ignored", "-until", "2099-01-01T00:00:00Z"},
		{"-state", "ignored", "-since", "1h", "-dry-run"},
		{"-state", "dead_letter,ignored", "-since", "1h"},
		{"-state", "ignored"},
		{"-state", "ignored", "-type", " "},
	} {
		r := idemctl(t, s.db, nil, append([]string{"redrive"}, args...)...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stdout)
		require.Equal(t, why, r.stderr, args)
		require.Empty(t, r.stdout, args)
	}
	// -all beside -type or -id: refused for -all, which -state ignored
	// never takes, not as if -all redrove every ignored event.
	for _, args := range [][]string{
		{"-state", "ignored", "-type", "invoice.finalized", "-all"},
		{"-state", "ignored", "-id", "evt_ignt_final", "-all"},
		{"-state", "dead_letter,ignored", "-type", "invoice.finalized", "-since", "1h", "-all"},
	} {
		r := idemctl(t, s.db, nil, append([]string{"redrive"}, args...)...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stdout)
		require.Equal(t, "idemctl: redrive: -state ignored takes no -all: -type or -id names the ignored events to redrive, "+
			"and -all would take those of every type no release handles\n", r.stderr, args)
		require.Empty(t, r.stdout, args)
	}
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_ignt_created").State)
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_ignt_final").State)

	r := idemctl(t, s.db, nil, "redrive", "-state", "ignored", "-type", "invoice.finalized", "-since", "1h")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	require.Equal(t, idempotency.InboxIgnored, s.lookup(t, "evt_ignt_created").State, "not of the type")

	help := idemctl(t, nil, nil, "redrive", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "),
		"-state ignored needs -type or -id:")
}
