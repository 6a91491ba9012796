package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedriveRefusalNamesTasks: redrive without a selector, or with -all
// beside one, is refused naming what -all would take: dead-lettered
// events and tasks without -kind, one kind with it. The refusal said
// "every dead_letter event" also where -all moves the tasks too, and
// redrive -h's summary, -all and -dry-run spoke of events alone.
func TestRedriveRefusalNamesTasks(t *testing.T) {
	const selectors = "pass -id, -type, -object, -account, -since or -until, or -all to redrive every "
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive"}, "no selector: " + selectors + "dead_letter event and task"},
		{[]string{"redrive", "-kind", "task"}, "no selector: " + selectors + "dead_letter task"},
		{[]string{"redrive", "-kind", "event", "-state", "failed"}, "no selector: " + selectors + "failed event"},
		{[]string{"redrive", "-all", "-type", "send-receipt"}, "-all redrives every dead_letter event and task: it takes no -id, -type, -object, -account, -since or -until"},
		{[]string{"redrive", "-all", "-kind", "task", "-since", "1h"}, "-all redrives every dead_letter task: it takes no -id, -type, -object, -account, -since or -until"},
	} {
		r := idemctl(t, nil, nil, c.args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Equal(t, "idemctl: redrive: "+c.want+"\n", r.stderr, "%v", c.args)
	}

	r := idemctl(t, nil, nil, "-h")
	require.Contains(t, r.stdout+r.stderr, "redrive  move dead-lettered (or failed) events and tasks, or ignored events, back to pending with a fresh attempt budget")
	r = idemctl(t, nil, nil, "redrive", "-h")
	help := r.stdout + r.stderr
	require.Contains(t, help, "redrive every event and task in -state")
	require.Contains(t, help, "count the events and tasks that would move; move none")
}
