package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The tests of this file each fail with a small change to idemctl that the
// other tests let through (a mutation audit): a bound moved by one, a
// check left out.

// noDB is the environment of a run that must stop before connecting.
func noDB(t *testing.T, args ...string) result {
	t.Helper()
	return idemctlCtx(t.Context(), nil, map[string]string{}, args...)
}

// TestTwoCharacterFlagAfterArguments: a flag of one letter after an id
// (-h) is refused as the longer ones are, before anything is forgotten.
func TestTwoCharacterFlagAfterArguments(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "forget", "evt_paid_1", "-h")
	require.Equal(t, exitUsage, r.code, r.stdout)
	require.Equal(t, "idemctl: forget: flag -h after the arguments: flags go before them\n", r.stderr)
	_, claimed, err := s.store.LookupEvent(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.True(t, claimed, "not forgotten")
}

// TestEmptyProgressRefused: -progress "" is not one of the modes.
func TestEmptyProgressRefused(t *testing.T) {
	t.Parallel()
	r := noDB(t, "-progress", "", "stats")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "idemctl: -progress \"\": want auto, lines or off\n", r.stderr)
}

// TestQuietAfterTheCommand: -quiet after the command's name silences the
// progress as it does before it.
func TestQuietAfterTheCommand(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	r := idemctl(t, s.db, nil, "redrive", "-progress", "lines", "-all", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "idemctl: redrive: redriving\n", r.stderr)
	r = idemctl(t, s.db, nil, "redrive", "-progress", "lines", "-quiet", "-all", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
}

// TestDurationEdges: the longest whole number of days time.Duration holds
// is read; a sign after the days, or before a duration, is refused.
func TestDurationEdges(t *testing.T) {
	t.Parallel()
	got, err := parseDuration("106751d")
	require.NoError(t, err)
	require.Equal(t, 106751*24*time.Hour, got)
	for _, in := range []string{"1d+2h", "+2h", "1d-2h"} {
		_, err := parseDuration(in)
		require.Error(t, err, in)
	}
}

// TestEmptyListValueRefused: a comma list with an empty value is a usage
// error, not the list without it.
func TestEmptyListValueRefused(t *testing.T) {
	t.Parallel()
	r := noDB(t, "list", "-state", "failed,")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "an empty value in the list")
}

// TestListExactlyLimit: as many records as -limit is not "more".
func TestListExactlyLimit(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t) // 5 events, 2 tasks
	r := idemctl(t, s.db, nil, "list", "-limit", "7")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, lines(r.stdout), 1+7)
	require.Empty(t, r.stderr)
	r = idemctl(t, s.db, nil, "list", "-limit", "6")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^idemctl: list: more than 6 records match; next: -after \S+, or raise -limit or narrow the selection\n$`, r.stderr)
}

// TestSinceEqualToUntilRefused: -since must be before -until; equal
// selects nothing and is refused.
func TestSinceEqualToUntilRefused(t *testing.T) {
	t.Parallel()
	r := noDB(t, "list", "-since", "2026-11-29", "-until", "2026-11-29")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "-since (2026-11-29T00:00:00Z) is not before -until (2026-11-29T00:00:00Z)")
}

// TestShowLastErrorWithoutControl: a handler's error, kept as it was
// returned, reaches show's text without its control characters.
func TestShowLastErrorWithoutControl(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	store := db.NewStore(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "charge.failed", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error {
		return errors.New("refused \x1b]0;pwned\x07\x1b[2J\u009b")
	})
	quiet := slog.New(slog.DiscardHandler)
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 1, Logger: quiet})
	require.NoError(t, err)
	hook, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, eventPayload(t, "evt_ctl_err", "charge.failed", "ch_1", time.Now().Unix()), secret)
	require.Equal(t, 200, a.Status, a.Body)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)

	r := idemctl(t, db, nil, "show", "evt_ctl_err")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "refused")
	for _, c := range []string{"\x1b", "\x07", "\u009b"} {
		require.NotContains(t, r.stdout, c)
	}
}

// TestRedriveUntilAloneSelects: -until alone is a selector.
func TestRedriveUntilAloneSelects(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "redrive", "-until", "2999-01-01", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 1 event (dry run: none moved)\n"+
		"not redriven, failed: 1 event of this selection (-state failed takes failed ones, -state dead_letter,failed both)\n", r.stdout)
}

// TestPruneNegativePauseRefused: any negative -pause is refused, also the
// smallest.
func TestPruneNegativePauseRefused(t *testing.T) {
	t.Parallel()
	r := noDB(t, "prune", "-pause", "-1ns")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "idemctl: prune: -pause -1ns: want 0 or more\n", r.stderr)
}

// TestRecoverTwentyTypes: the Events API takes 20 types; 21 are refused.
func TestRecoverTwentyTypes(t *testing.T) {
	t.Parallel()
	types := make([]string, 21)
	for i := range types {
		types[i] = fmt.Sprintf("invoice.t%02d", i)
	}
	r := noDB(t, "recover", "-since", "1h", "-types", strings.Join(types[:20], ","))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "STRIPE_SECRET_KEY is not set", "20 types pass")
	r = noDB(t, "recover", "-since", "1h", "-types", strings.Join(types, ","))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "-types lists 21 types; the Events API takes at most 20")
}

// TestPruneWithoutPause: -pause 0 waits nothing between batches, which
// Retention spells -1; its zero is the library's default pause (50ms).
func TestPruneWithoutPause(t *testing.T) {
	require.Equal(t, time.Duration(-1), retentionPause(0))
	require.Equal(t, 5*time.Millisecond, retentionPause(5*time.Millisecond))
}
