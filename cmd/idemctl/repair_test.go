package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedrive: no selector is refused unless -all; -dry-run counts and
// moves nothing; a selection moves its events back to pending with a fresh
// budget, and the service's workers apply them.
func TestRedrive(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "redrive")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "idemctl: redrive: no selector: pass -id, -type, -object, -account, -since or -until, or -all to redrive every dead_letter event and task\n", r.stderr)
	r = idemctl(t, s.db, nil, "redrive", "-state", "failed")
	require.Equal(t, exitUsage, r.code, "a state alone is no selector")
	r = idemctl(t, s.db, nil, "redrive", "-state", "processed", "-all")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "idemctl: redrive: -state processed: only failed, dead_letter, ignored events are redriven\n", r.stderr)

	r = idemctl(t, s.db, nil, "redrive", "-all", "-state", "dead_letter,failed", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 2 events (dry run: none moved)\n", r.stdout)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State)

	r = idemctl(t, s.db, nil, "redrive", "-type", "invoice.paid")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 0 events: none selected is dead_letter\n", r.stdout, "dead letters only, by default")

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1", "-since", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	rec := s.lookup(t, "evt_dead_1")
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Zero(t, rec.Attempt, "a fresh budget")
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_failed_1").State, "not selected")

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_failed_1,evt_paid_1", "-state", "failed")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_paid_1: not redriven: it is processed, not failed\n"+
		"redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_failed_1").State)
}

// TestForget: a forgotten event is applied again when it comes next; an
// unknown id exits 3 (the others are still forgotten); an event still to be
// applied is refused and keeps everything.
func TestForget(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	ctx := t.Context()
	_, found, err := s.store.LookupGuard(ctx, "invoice-credit", "in_1")
	require.NoError(t, err)
	require.True(t, found)

	r := idemctl(t, s.db, nil, "forget", "evt_paid_1", "evt_unknown")
	require.Equal(t, exitNotFound, r.code)
	require.Equal(t, "evt_paid_1: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n"+
		"evt_unknown: not found: the store has no claim, guard or inbox row of it\n", r.stdout)
	require.Equal(t, "idemctl: forget: 1 of 2 ids not found: evt_unknown\n", r.stderr)
	_, found, err = s.store.LookupEvent(ctx, "evt_paid_1")
	require.NoError(t, err)
	require.False(t, found, "the claim is gone")
	_, found, err = s.store.LookupGuard(ctx, "invoice-credit", "in_1")
	require.NoError(t, err)
	require.False(t, found, "the guard is gone")
	_, found, err = s.inbox.Lookup(ctx, "evt_paid_1")
	require.NoError(t, err)
	require.False(t, found, "the inbox row is gone")

	r = idemctl(t, s.db, nil, "forget", "evt_pending_1", "evt_paid_2")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stdout, "evt_pending_1: refused: still to be applied in the inbox")
	require.Contains(t, r.stdout, "evt_paid_2: forgotten")
	require.Equal(t, "idemctl: forget: 1 of 2 ids refused: evt_pending_1\n", r.stderr)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_pending_1").State)

	// Delivered again, it is stored and applied as new: at once by a
	// replica that does not remember it; the replica that stored it
	// remembers it for up to PgxConfig.RecentClaimsTTL, as forget -h says.
	require.Equal(t, idempotency.OutcomeDuplicate, s.deliver(t, "evt_paid_1", "invoice.paid", "in_1"))
	replica := newReplica(t, s)
	require.Equal(t, idempotency.OutcomeQueued, replica.deliver(t, "evt_paid_1", "invoice.paid", "in_1"))
	replica.work(t, replica.inbox)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_paid_1").State)
	_, found, err = s.store.LookupGuard(ctx, "invoice-credit", "in_1")
	require.NoError(t, err)
	require.True(t, found, "the handler ran again")
	ev, found, err := s.store.LookupEvent(ctx, "evt_paid_1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, idempotency.OutcomeProcessed, ev.Outcome)

	require.Equal(t, exitUsage, idemctl(t, s.db, nil, "forget").code)
	help := idemctl(t, s.db, nil, "forget", "-h")
	require.Equal(t, 0, help.code)
	require.Contains(t, help.stdout, "PgxConfig.RecentClaimsTTL (1 minute\nby default)")
	require.Equal(t, time.Minute, idempotency.DefaultRecentClaimsTTL, "the bound forget -h and the README cite")
}

// TestMigrate: an empty schema is refused with a hint until migrated.
func TestMigrate(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	r := idemctl(t, db, nil, "stats")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, `idemctl: stats: the store's tables are not in schema "`+db.Schema+`" (pass -schema, or run idemctl migrate)`)
	require.Len(t, lines(r.stderr), 1)

	r = idemctl(t, db, nil, "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, `schema "`+db.Schema+`" is migrated`+"\n", r.stdout)
	require.Equal(t, 0, idemctl(t, db, nil, "migrate").code, "idempotent")
	r = idemctl(t, db, nil, "stats", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Zero(t, decode[statsJSON](t, r).DeadLetters)
}

// TestUsage: exit 2 with one line on stderr for what a script got wrong;
// -h answers 0 with the exit codes.
func TestUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "idemctl: no command given; see idemctl -h\n"},
		{[]string{"frobnicate"}, "idemctl: unknown command \"frobnicate\"; see idemctl -h\n"},
		{[]string{"-nope", "stats"}, "idemctl: flag provided but not defined: -nope\n"},
		{[]string{"stats", "-nope"}, "idemctl: stats: flag provided but not defined: -nope\n"},
		{[]string{"-progress", "loud", "stats"}, "idemctl: -progress \"loud\": want auto, lines or off\n"},
		{[]string{"prune", "-event-ids", "30d"}, "idemctl: prune: -event-ids 30 days: claimed event ids are kept at least 45 days, longer than recovery from the Events API reaches back (30 days), so that no event is applied twice\n"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), c.args, &stdout, &stderr, func(string) string { return "" })
		require.Equal(t, exitUsage, code, c.args)
		require.True(t, strings.HasSuffix(stderr.String(), c.want), "%v: %s", c.args, stderr.String())
	}
	var stdout, stderr strings.Builder
	require.Equal(t, exitUsage, run(t.Context(), []string{"stats"}, &stdout, &stderr, func(string) string { return "" }))
	require.Equal(t, "idemctl: stats: no database: pass -database-url or set DATABASE_URL\n", stderr.String())

	for _, args := range [][]string{{"-h"}, {"help"}, {"help", "-h"}, {"help", "prune"}, {"prune", "-h"}} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), args, &stdout, &stderr, func(string) string { return "" })
		require.Equal(t, 0, code, args)
		require.Empty(t, stderr.String())
		require.Contains(t, stdout.String(), "Exit codes:\n  0    done\n", args)
		require.Contains(t, stdout.String(), "  130  interrupted", args)
	}
}

// TestUnavailable: a database that cannot be reached exits 4, and the
// password in the URL is not printed.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://idemctl:s3cret-pw@127.0.0.1:1/nodb?connect_timeout=5"}
	for _, args := range [][]string{{"stats"}, {"prune"}, {"migrate"}} {
		r := idemctlCtx(t.Context(), nil, env, args...)
		require.Equal(t, exitUnavailable, r.code, "%v: %s", args, r.stderr)
		require.Len(t, lines(r.stderr), 1)
		require.Contains(t, r.stderr, "store unavailable")
		require.NotContains(t, r.stderr, "s3cret-pw")
	}
}

// TestFlagsAfterArguments: a flag written after an id is refused before
// anything is done, not taken for an id: "forget evt_1 -schema billing"
// must not forget evt_1 in the schema of the flags before the command.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	for _, args := range [][]string{
		{"forget", "evt_paid_1", "-schema", "billing"},
		{"forget", "evt_paid_1", "-quiet"},
		{"show", "evt_paid_1", "-payload"},
	} {
		r := idemctl(t, s.db, nil, args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stdout)
		require.Empty(t, r.stdout, args)
		require.Equal(t, "idemctl: "+args[0]+": flag "+args[2]+" after the arguments: flags go before them\n", r.stderr)
	}
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_paid_1").State, "not forgotten")
	_, claimed, err := s.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.True(t, claimed, "not forgotten")
}

// TestDatabaseURLPasswordNeverPrinted: whatever is wrong with the database
// URL, the error names it without the password, or a piece of it (an
// '@' in a password cut it there, and the rest was read as the host, and
// after a '/', the database, and printed).
func TestDatabaseURLPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	for url, code := range map[string]int{
		"postgres://idemctl:s3cret-pw@127.0.0.1:notaport/db":                     exitUsage,
		"postgres://idemctl:s3cret-pw@[::1/db":                                   exitUsage,
		"postgres://idemctl:s3cret-pw%zz@127.0.0.1/db":                           exitUsage,
		"postgres://idemctl:s3cret-pw@127.0.0.1/db?sslmode=bogus":                exitUsage,
		"postgres://idemctl:s3cret-pw@127.0.0.1/db?pool_max_conns=x":             exitUsage,
		"postgres://idemctl@127.0.0.1/db?password=s3cret-pw&sslmode=bogus":       exitUsage,
		"postgres://idemctl:s3c@ret-pw/tail-pw@127.0.0.1:1/db?connect_timeout=5": exitUsage,
		"postgres://idemctl:s3c@ret-pw@127.0.0.1:1/db?connect_timeout=5":         exitUsage,
		"host=127.0.0.1 password=s3cret-pw port=x":                               exitUsage,
		"host=127.0.0.1 password = s3cret-pw port=x":                             exitUsage,
		"host=127.0.0.1 password= s3cret-pw port=x":                              exitUsage,
		"host=127.0.0.1 password='s3cret-pw":                                     exitUsage,
		"postgres://idemctl:s3cret-pw@127.0.0.1:1/nodb?connect_timeout=5":        exitUnavailable,
		"host=127.0.0.1 port=1 password=s3cret-pw dbname=nodb connect_timeout=5": exitUnavailable,
	} {
		r := idemctlCtx(t.Context(), nil, map[string]string{"DATABASE_URL": url}, "stats")
		require.Equal(t, code, r.code, "%s: %s", url, r.stderr)
		require.Len(t, lines(r.stderr), 1, url)
		require.NotContains(t, r.stdout+r.stderr, "s3cret", url)
		require.NotContains(t, r.stdout+r.stderr, "-pw", url)
	}
}

// TestForgetRefusesTasks: forget takes event ids; a task's id (list shows
// tasks beside events) is refused and its record kept, so that the task is
// not enqueued and run again (the dashboard offers no forget for a task
// either).
func TestForgetRefusesTasks(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "forget", "task:send-receipt:in_1", "evt_paid_2")
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stdout, "task:send-receipt:in_1: refused: a task, not an event; nothing of it deleted\n")
	require.Contains(t, r.stdout, "evt_paid_2: forgotten")
	require.Equal(t, "idemctl: forget: 1 of 2 ids refused: task:send-receipt:in_1\n", r.stderr)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "task:send-receipt:in_1").State)
}

// TestRedriveUntilYearOne: -until 0001-01-01 selects the events received
// before the year 1, none; it must not become an open end (the zero time)
// and redrive every dead letter of the type.
func TestRedriveUntilYearOne(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	for _, until := range []string{"0001-01-01", "0001-01-01T00:00:00Z"} {
		r := idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-until", until)
		require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State, "-until %s: %s", until, r.stdout)
		require.Equal(t, exitUsage, r.code, "-until %s: %s%s", until, r.stdout, r.stderr)
		require.Contains(t, r.stderr, "-until", until)
	}
	r := idemctl(t, s.db, nil, "list", "-until", "0001-01-01", "-json")
	require.Equal(t, exitUsage, r.code, "%s%s", r.stdout, r.stderr)
}

// TestRedriveAllWithSelector: -all and a selector contradict each other
// (every dead letter, or only those selected): refused, nothing moved.
func TestRedriveAllWithSelector(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "redrive", "-all", "-id", "evt_dead_1", "-dry-run")
	require.Equal(t, exitUsage, r.code, "%s%s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "-all")
}

// TestBadTextIsUsage: a flag value the store cannot hold (invalid UTF-8)
// is a usage error, exit 2, as the package doc says of a bad flag.
func TestBadTextIsUsage(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	for _, args := range [][]string{
		{"list", "-type", "invoice.\xff"},
		{"list", "-object", "in_\xff"},
		{"redrive", "-type", "invoice.\xff"},
		{"redrive", "-id", "evt_\xff"},
	} {
		r := idemctl(t, s.db, nil, args...)
		require.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State)
	}
}
