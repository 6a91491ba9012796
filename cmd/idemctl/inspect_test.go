package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestStats: the counts by state, events apart from tasks, the oldest
// pending event's age, the last attempt's and the dead letters, as a
// table and as JSON; an inbox where nothing was attempted has no last
// attempt.
func TestStats(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.deliver(t, "evt_first", "invoice.paid", "in_first")
	r := idemctl(t, s.db, nil, "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^last attempt: none$`, r.stdout)
	doc := decode[statsJSON](t, idemctl(t, s.db, nil, "stats", "-json"))
	require.Nil(t, doc.LastAttempt, "nothing attempted")
	require.Nil(t, doc.LastAgeSecs, "nothing attempted")
	s.seed(t)

	r = idemctl(t, s.db, nil, "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	for _, want := range []string{
		`(?m)^STATE\s+EVENTS\s+TASKS$`,
		`(?m)^pending\s+1\s+0$`, `(?m)^processed\s+3\s+3$`, `(?m)^failed\s+1\s+0$`,
		`(?m)^dead_letter\s+1\s+0$`, `(?m)^processing\s+0\s+0$`,
		`(?m)^ignored\s+0\s+-$`, // a task is never ignored: no count, as otel has no series
		`(?m)^oldest pending: \S+Z \(\d+s ago\)$`, `(?m)^last attempt: \S+Z \(\d+s ago\)$`, `(?m)^dead letters: 1$`,
	} {
		require.Regexp(t, want, r.stdout)
	}

	doc = decode[statsJSON](t, idemctl(t, s.db, nil, "stats", "-json"))
	require.Equal(t, 1, doc.Events[idempotency.InboxPending])
	require.Equal(t, 3, doc.Events[idempotency.InboxProcessed])
	require.Equal(t, 3, doc.Tasks[idempotency.InboxProcessed])
	require.Equal(t, 1, doc.Events[idempotency.InboxFailed])
	require.Equal(t, 1, doc.DeadLetters)
	require.Len(t, doc.Tasks, len(states), "every state, zero included")
	require.NotNil(t, doc.OldestPending)
	// The oldest still to be applied is the failed event, received before
	// the pending one.
	require.Equal(t, s.lookup(t, "evt_failed_1").ReceivedAt.UTC(), *doc.OldestPending)
	require.GreaterOrEqual(t, *doc.OldestAgeSecs, int64(0))
	// The last attempt is the newest of the seed's, which attempted the
	// failed event after the dead letter.
	st, err := s.inbox.Stats(t.Context())
	require.NoError(t, err)
	require.False(t, st.LastAttempt.Before(s.lookup(t, "evt_failed_1").AttemptedAt))
	require.NotNil(t, doc.LastAttempt)
	require.Equal(t, st.LastAttempt.UTC(), *doc.LastAttempt)
	require.GreaterOrEqual(t, *doc.LastAgeSecs, int64(0))
}

// TestList: the selectors narrow the list; the table has no payload; -json
// is one document with stable field names; -limit says when more match.
func TestList(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "list")
	require.Equal(t, 0, r.code, r.stderr)
	ls := lines(r.stdout)
	require.Regexp(t, `^ID\s+KIND\s+TYPE\s+OBJECT\s+ACCOUNT\s+STATE\s+ATTEMPTS\s+RECEIVED\s+DUE\s+LAST ERROR$`, ls[0])
	require.Len(t, ls, 1+5+2)
	require.Equal(t, "evt_pending_1", strings.Fields(ls[1])[0], "newest received first")
	require.Regexp(t, `(?m)^task:send-receipt:in_1\s+task\s+send-receipt\s+-\s+-\s+processed\s+1\s`, r.stdout)
	require.NotContains(t, r.stdout, customerEmail, "no payload")
	require.Regexp(t, `(?m)^evt_dead_1\s+event\s+charge\.failed\s+ch_1\s+-\s+dead_letter\s+1\s+\S+Z\s+.*downstream refused the charge`, r.stdout)

	r = idemctl(t, s.db, nil, "list", "-state", "dead_letter,failed")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, lines(r.stdout), 1+2)
	require.Contains(t, r.stdout, "evt_dead_1")
	require.Contains(t, r.stdout, "evt_failed_1")

	r = idemctl(t, s.db, nil, "list", "-type", "invoice.paid", "-object", "in_2")
	require.Len(t, lines(r.stdout), 1+1)
	require.Contains(t, r.stdout, "evt_paid_2")

	r = idemctl(t, s.db, nil, "list", "-kind", "task")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, lines(r.stdout), 1+2)
	require.NotContains(t, r.stdout, "evt_")
	r = idemctl(t, s.db, nil, "list", "-kind", "event", "-state", "processed")
	require.Len(t, lines(r.stdout), 1+2)
	require.NotContains(t, r.stdout, "task:")

	// Relative and absolute times: everything was received within the hour.
	require.Len(t, lines(idemctl(t, s.db, nil, "list", "-since", "1h").stdout), 1+5+2)
	require.Len(t, lines(idemctl(t, s.db, nil, "list", "-until", "1h").stdout), 1)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.Len(t, lines(idemctl(t, s.db, nil, "list", "-since", future).stdout), 1)

	r = idemctl(t, s.db, nil, "list", "-limit", "2")
	require.Len(t, lines(r.stdout), 1+2)
	require.Regexp(t, `^idemctl: list: more than 2 records match; next: -after \S+, or raise -limit or narrow the selection\n$`, r.stderr)
	r = idemctl(t, s.db, nil, "list", "-limit", "1")
	require.Regexp(t, `^idemctl: list: more than 1 record matches; next: -after \S+, or raise -limit or narrow the selection\n$`, r.stderr)

	doc := decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json", "-state", "failed"))
	require.False(t, doc.More)
	require.Len(t, doc.Records, 1)
	rec := doc.Records[0]
	require.Equal(t, "evt_failed_1", rec.ID)
	require.Equal(t, "event", rec.Kind)
	require.Equal(t, "charge.failed", rec.Type)
	require.Equal(t, "ch_2", rec.ObjectID)
	require.Equal(t, "failed", rec.State)
	require.Equal(t, 1, rec.Attempts)
	require.Contains(t, rec.LastError, "downstream refused the charge")
	require.NotNil(t, rec.NextAttemptAt)
	require.Nil(t, rec.FinishedAt)
	// Stable names, every field present.
	raw := idemctl(t, s.db, nil, "list", "-json", "-limit", "1").stdout
	for _, name := range []string{"id", "kind", "type", "object_id", "account", "livemode", "api_version", "created", "state",
		"attempts", "redrives", "redriven_at", "last_error", "received_at", "attempted_at", "next_attempt_at", "finished_at", "lease_until"} {
		require.Contains(t, raw, `"`+name+`":`)
	}
	require.Contains(t, raw, `"records":`)
	require.Contains(t, raw, `"more": true`)

	for _, args := range [][]string{
		{"list", "-state", "lost"}, {"list", "-kind", "job"}, {"list", "-limit", "0"},
		{"list", "-since", "yesterday"}, {"list", "-since", "1h", "-until", "2h"}, {"list", "extra"},
	} {
		r := idemctl(t, s.db, nil, args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		require.Regexp(t, `^idemctl: list: [^\n]+\n$`, r.stderr, args)
	}
}

// TestShow: the inbox record and the ledger record of one event; the
// payload only with -payload; an unknown id exits 3; a value that is
// empty is shown as "-".
func TestShow(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "show", "evt_dead_1")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{
		`(?m)^id\s+evt_dead_1$`, `(?m)^type\s+charge\.failed$`, `(?m)^object\s+ch_1$`,
		`(?m)^  state\s+dead_letter$`, `(?m)^  attempts\s+1$`, `(?m)^  last error\s+.*downstream refused the charge`,
		`(?m)^  received\s+\S+Z$`, `(?m)^  attempted\s+\S+Z$`, `(?m)^  next attempt\s+-$`, `(?m)^  finished\s+\S+Z$`,
		`(?m)^ledger\s+not claimed`,
	} {
		require.Regexp(t, want, r.stdout)
	}
	require.NotContains(t, r.stdout, customerEmail, "no payload without -payload")

	r = idemctl(t, s.db, nil, "show", "evt_paid_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+processed$`, r.stdout)
	require.Regexp(t, `(?m)^  outcome\s+processed$`, r.stdout)
	require.Regexp(t, `(?m)^  processed at\s+\S+Z$`, r.stdout)
	require.NotContains(t, r.stdout, customerEmail)

	r = idemctl(t, s.db, nil, "show", "-payload", "evt_paid_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\npayload:\n{")
	require.Contains(t, r.stdout, customerEmail)

	type showDoc struct {
		ID      string         `json:"id"`
		Inbox   *recordJSON    `json:"inbox"`
		HeldBy  []holderJSON   `json:"held_by"`
		Ledger  *ledgerJSON    `json:"ledger"`
		Payload map[string]any `json:"payload"`
	}
	doc := decode[showDoc](t, idemctl(t, s.db, nil, "show", "-json", "evt_paid_1"))
	require.Equal(t, "evt_paid_1", doc.ID)
	require.Equal(t, "processed", doc.Inbox.State)
	require.Equal(t, "processed", doc.Ledger.Outcome)
	require.NotNil(t, doc.Ledger.ProcessedAt)
	require.Nil(t, doc.Payload)
	doc = decode[showDoc](t, idemctl(t, s.db, nil, "show", "-json", "-payload", "evt_paid_1"))
	require.Equal(t, "evt_paid_1", doc.Payload["id"])

	r = idemctl(t, s.db, nil, "show", "evt_unknown")
	require.Equal(t, exitNotFound, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "idemctl: show: evt_unknown: neither the inbox nor the ledger has it: it did not reach this store, "+
		"or its delivery failed, which stores nothing (answered 5xx: in synchronous mode a handler's error, and Stripe sends it again), "+
		"or it was answered ignored "+
		"(a type without a handler, stored only with Config.RecordIgnored), or its claim was pruned (kept Retention.EventIDs, 45 days by default)\n", r.stderr)

	r = idemctl(t, s.db, nil, "show", "-payload", "task:send-receipt:in_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^kind\s+task$`, r.stdout)
	require.Regexp(t, `(?m)^ledger\s+- \(a task has no ledger record`, r.stdout)
	require.Contains(t, r.stdout, "\npayload:\n\""+customerEmail+"\"\n", "a task's arguments as JSON")

	require.Equal(t, exitUsage, idemctl(t, s.db, nil, "show").code)
	require.Equal(t, exitUsage, idemctl(t, s.db, nil, "show", "a", "b").code)

	// The whole text, times as T: one empty line between sections, and
	// no line, blank or a section's heading, padded with spaces.
	_, err := s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_skip", EventType: "charge.refunded", ObjectID: "ch_sync"},
		func(context.Context, idempotency.Tx) error { return idempotency.Skip("refunds are booked by hand") })
	require.NoError(t, err)
	// A claim with no type, skipped for a reason that is only whitespace:
	// each value shown as "-", not left empty as a heading is.
	_, err = s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_untyped"},
		func(context.Context, idempotency.Tx) error { return idempotency.Skip(" \n ") })
	require.NoError(t, err)
	// An event a synchronous Handler applied, whose retry an inbox Handler
	// stored again (queued: it reads the inbox, not the ledger): its claim
	// is not the inbox's, and show says the inbox applies nothing.
	_, err = s.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_first", EventType: "invoice.paid", ObjectID: "in_sync",
		ReceivedAt: s.clock().Add(-time.Minute)}, func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, s.deliver(t, "evt_sync_first", "invoice.paid", "in_sync"))
	head := func(id, kind, typ, object, apiVersion string) string {
		return "id              " + id + "\nkind            " + kind + "\ntype            " + typ + "\nobject          " + object +
			"\naccount         -\nlivemode        false\napi version     " + apiVersion + "\ncreated         T\n\ninbox\n"
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "evt_dead_1"}, head("evt_dead_1", "event", "charge.failed", "ch_1", stripe.APIVersion) +
			"  state         dead_letter\n  attempts      1\n  redriven      never\n  last error    downstream refused the charge\n" +
			"  received      T\n  attempted     T\n  next attempt  -\n  finished      T\n\n" +
			"ledger          not claimed: no transaction has applied it\n"},
		{[]string{"show", "-payload", "evt_paid_1"}, head("evt_paid_1", "event", "invoice.paid", "in_1", stripe.APIVersion) +
			"  state         processed\n  attempts      1\n  redriven      never\n  last error    -\n" +
			"  received      T\n  attempted     T\n  next attempt  -\n  finished      T\n\n" +
			"ledger\n  outcome       processed\n  processed at  T\n\npayload:\n{\"api_version\":\"" + stripe.APIVersion},
		{[]string{"show", "evt_pending_1"}, head("evt_pending_1", "event", "invoice.paid", "in_3", stripe.APIVersion) +
			"  state         pending\n  attempts      0\n  redriven      never\n  last error    -\n" +
			"  received      T\n  attempted     -\n  next attempt  T\n  finished      -\n" +
			"  held by       - (nothing: due at its next attempt)\n\n" +
			"ledger          not claimed: no transaction has applied it\n"},
		{[]string{"show", "evt_sync_first"}, head("evt_sync_first", "event", "invoice.paid", "in_sync", stripe.APIVersion) +
			"  state         pending\n  attempts      0\n  redriven      never\n  last error    -\n" +
			"  received      T\n  attempted     -\n  next attempt  T\n  finished      -\n" +
			"  held by       - (nothing: due at its next attempt)\n\n" +
			"ledger\n  outcome       processed\n" +
			"  claimed by    another delivery (received T: a synchronous Handler, or a copy pruned from the inbox), not this inbox row: the inbox's attempts apply nothing\n" +
			"  processed at  T\n"},
		// A task has a name, a key and the idempotency key of its attempts,
		// and the time its event's transaction enqueued it; no object,
		// account, mode or API version.
		{[]string{"show", "task:send-receipt:in_1"}, "id               task:send-receipt:in_1\nkind             task\n" +
			"name             send-receipt\nkey              in_1\n" +
			"idempotency key  send-receipt-fecb372f8843489f63fb5ef7e9e191a18900dcdd5028fffcb82af7d392470223\nenqueued         T\n\ninbox\n" +
			"  state          processed\n  attempts       1\n  redriven       never\n  last error     -\n" +
			"  received       T\n  attempted      T\n  next attempt   -\n  finished       T\n\n" +
			"ledger           - (a task has no ledger record: its inbox row is its record)\n"},
		{[]string{"show", "-payload", "evt_sync_skip"}, "id              evt_sync_skip\ntype            charge.refunded\nobject          ch_sync\n" +
			"account         -\nlivemode        false\n\ninbox           not in the inbox (delivered synchronously, or pruned)\n\n" +
			"ledger\n  outcome       skipped\n  skip reason   refunds are booked by hand\n  processed at  T\n\n" +
			"payload: not stored (not in the inbox, or pruned)\n"},
		{[]string{"show", "evt_sync_untyped"}, "id              evt_sync_untyped\ntype            -\nobject          -\n" +
			"account         -\nlivemode        false\n\ninbox           not in the inbox (delivered synchronously, or pruned)\n\n" +
			"ledger\n  outcome       skipped\n  skip reason   -\n  processed at  T\n"},
	} {
		r := idemctl(t, s.db, nil, c.args...)
		require.Equal(t, 0, r.code, r.stderr)
		got := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(r.stdout, "T")
		if c.args[1] == "-payload" && strings.Contains(c.want, "{") {
			got = got[:min(len(got), len(c.want))] // the payload's start
		}
		require.Equal(t, c.want, got, c.args)
	}
}

// TestTimes: -since and -until read RFC 3339, dates and durations before
// now, days included; anything else is refused.
func TestTimes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-29T10:00:00Z":      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		"2026-11-29T10:00:00+01:00": time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC),
		"2026-11-29":                time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		"2h":                        now.Add(-2 * time.Hour),
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"1d12h":                     now.Add(-36 * time.Hour),
		"0":                         now,
	} {
		got, err := parseTime(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %s", in, got)
	}
	for _, in := range []string{"", "yesterday", "-2h", "2x", "d", "1.5d", "-1d", "1d-2h", "99999999999d"} {
		_, err := parseTime(in, now)
		require.Error(t, err, in)
	}
	require.Equal(t, "45d", formatDuration(45*24*time.Hour))
	require.Equal(t, "36h0m0s", formatDuration(36*time.Hour))
	require.Regexp(t, regexp.MustCompile(`not a time`), func() string { _, err := parseTime("x", now); return err.Error() }())
}

// TestNoTerminalControl: the text that payloads and handlers put in the
// store (an object id, an event id, a last error) reaches the operator's
// terminal without its control characters, so that it cannot move the
// cursor, retitle the window or hide lines; -json escapes them.
func TestNoTerminalControl(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	const evil = "ch_\x1b]0;pwned\x07\x1b[2J\r\u009b"
	s.deliver(t, "evt_ctl\x1b[1A", "charge.failed", evil)
	s.work(t, s.dead)
	for _, args := range [][]string{
		{"list"}, {"list", "-json"}, {"show", "-payload", "evt_ctl\x1b[1A"}, {"show", "-json", "-payload", "evt_ctl\x1b[1A"},
		{"show", "nope\x1b[2J"}, {"forget", "nope\x1b[2J"},
	} {
		r := idemctl(t, s.db, nil, args...)
		require.Contains(t, []int{0, exitNotFound}, r.code, "%q: %s", args, r.stderr)
		out := r.stdout + r.stderr
		require.NotContains(t, out, "\x1b", "%q", args)
		require.NotContains(t, out, "\x07", "%q", args)
		require.NotContains(t, out, "\r", "%q", args)
		require.NotContains(t, out, "\u009b", "%q", args)
	}
	r := idemctl(t, s.db, nil, "list", "-json")
	require.Equal(t, evil, decode[listJSON](t, r).Records[0].ObjectID, "-json keeps the text, escaped")
}

// TestListMoreAtMaxLimit: at -limit MaxListLimit, the most the library
// lists at once, "more" still says whether more records match, also
// among records received in the same microsecond as the last one listed.
func TestListMoreAtMaxLimit(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)                         // 7 rows received now, 3 of them invoice.paid events
	n := idempotency.MaxListLimit - 3 // invoice.paid: exactly MaxListLimit; in all, more
	received := time.Now().Add(-time.Hour)
	_, err := s.db.Pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{s.db.Schema}.Sanitize()+`.idempotency_inbox
    (event_id, event_type, created, payload, state, received_at, finished_at)
SELECT 'evt_bulk_' || lpad(i::text, 6, '0'), 'invoice.paid', $2, '\x7b7d', 'processed', $2, $2
FROM generate_series(1, $1) AS i`, n, received)
	require.NoError(t, err)

	limit := strconv.Itoa(idempotency.MaxListLimit)
	doc := decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json", "-limit", limit))
	require.Len(t, doc.Records, idempotency.MaxListLimit)
	require.True(t, doc.More, "%d records match, %d listed", n+7, len(doc.Records))
	r := idemctl(t, s.db, nil, "list", "-limit", limit)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "more than "+limit+" records match")

	doc = decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json", "-limit", limit, "-type", "invoice.paid"))
	require.False(t, doc.More, "exactly %d match", len(doc.Records))
}
