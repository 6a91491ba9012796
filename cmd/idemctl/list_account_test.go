package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListByAccount: -account keeps the records of one connected account;
// -object alone spans every account. A value that is not text is refused,
// naming the field, and so is -kind task with either. There was no
// -account.
func TestListByAccount(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "list", "-object", "in_2", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, decode[listJSON](t, r).Records, 1, "the platform's event")
	r = idemctl(t, s.db, nil, "list", "-object", "in_2", "-account", "acct_other", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, decode[listJSON](t, r).Records)
	r = idemctl(t, s.db, nil, "list", "-account", "acct_\xff")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "InboxFilter.Account")
	// A task has neither: -kind task with either is a usage error, as in
	// redrive, not an empty list.
	r = idemctl(t, s.db, nil, "list", "-kind", "task", "-account", "acct_other")
	require.Equal(t, exitUsage, r.code, r.stdout)
	require.Equal(t, "idemctl: list: -kind task with -account: a task has no account; -account and -object list events\n", r.stderr)
	r = idemctl(t, s.db, nil, "list", "-kind", "task", "-object", "in_2")
	require.Equal(t, exitUsage, r.code, r.stdout)
	require.Contains(t, r.stderr, "-kind task with -object: a task has no object")
}
