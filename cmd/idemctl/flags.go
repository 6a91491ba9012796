package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/display"
)

// parseDuration parses a Go duration with an optional leading whole number
// of days: 45d, 1d12h, 90m. Negative durations are refused.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("an empty duration")
	}
	var days int
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 45d, 36h or 1d12h", s)
		}
		days, rest = n, s[i+1:]
	}
	const day = 24 * time.Hour
	if int64(days) > math.MaxInt64/int64(day) {
		return 0, fmt.Errorf("%q is too long", s)
	}
	d := time.Duration(days) * day
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("%q is not a duration such as 45d, 36h or 1d12h", s)
		}
		// What follows the days may be a day or more (36h, 0d48h): only
		// a sum past time.Duration's range is too long.
		if r > math.MaxInt64-d {
			return 0, fmt.Errorf("%q is too long", s)
		}
		d += r
	}
	return d, nil
}

// formatDuration writes d as parseDuration reads it, in days where whole.
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// parseTime parses an RFC 3339 time, a date (UTC), or a duration before now.
// A time at or before 0001-01-01T00:00:00Z is refused: the zero time is
// what the library takes for an open bound, and -until 0001-01-01 would
// select everything instead of nothing.
func parseTime(s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err == nil {
		if !t.After(time.Time{}) {
			return time.Time{}, fmt.Errorf("%q is not after 0001-01-01T00:00:00Z", s)
		}
		return t, nil
	}
	if d, err := parseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-11-30T14:00:00Z), a date (2026-11-30) or a duration before now (2h, 7d)", s)
}

// timeFlag is a -since or -until flag: a time, or a duration before now,
// which at measures back from the clock it is given.
type timeFlag struct {
	t   time.Time     // the time given
	ago time.Duration // the duration given, when rel
	rel bool
}

// set reports whether the flag was given.
func (f *timeFlag) set() bool { return f.rel || !f.t.IsZero() }

// at is the flag's time: a duration measured back from now. A command
// connected to the database passes its clock (dbNow), on which the
// replicas dated what it selects, so that -since 2h is the last two hours
// whatever the clock of the machine idemctl runs on says.
func (f *timeFlag) at(now time.Time) time.Time {
	if f.rel {
		return now.Add(-f.ago)
	}
	return f.t
}

func (f *timeFlag) String() string {
	switch {
	case f == nil || !f.set():
		return ""
	case f.rel:
		return formatDuration(f.ago)
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	if d, err := parseDuration(s); err == nil {
		*f = timeFlag{ago: d, rel: true}
		return nil
	}
	t, err := parseTime(s, time.Time{}) // not a duration: tried above
	if err != nil {
		return err
	}
	*f = timeFlag{t: t}
	return nil
}

// durationFlag is a retention window: unset leaves the library's default.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return formatDuration(f.d)
}

func (f *durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	f.d, f.set = d, true
	return nil
}

// listFlag collects a repeatable flag whose values may be comma lists.
type listFlag []string

func (f *listFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(*f, ",")
}

func (f *listFlag) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		v = pasted(v)
		if v == "" {
			return errors.New("an empty value in the list")
		}
		*f = append(*f, v)
	}
	return nil
}

// idsFlag collects redrive's -id: repeatable; a value is a comma list of
// event ids, or one task's id as it is. A task's id is task:<name>:<key>,
// and its key may hold commas and begin or end with spaces (a customer's
// name): split or trimmed, it would name another task, or none.
type idsFlag []string

func (f *idsFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(*f, ",")
}

func (f *idsFlag) Set(s string) error {
	if display.IsTaskID(s) {
		*f = append(*f, s)
		return nil
	}
	var ids listFlag
	if err := ids.Set(s); err != nil {
		return err
	}
	for _, id := range ids {
		// In a list, or after white space: split and trimmed, the
		// task's id could name another task, which would run again.
		if display.IsTaskID(id) {
			return errors.New("a task's id goes alone in its -id, as it is, white space included: its key may hold commas and spaces")
		}
	}
	*f = append(*f, ids...)
	return nil
}

// trimID is an id an operator pastes (list's and ledger's -after, show's
// and forget's arguments) without the white space around it (pasted), as
// -id reads an event's; a task's id as it is.
func trimID(id string) string {
	if display.IsTaskID(id) {
		return id
	}
	return pasted(id)
}

// pasted is a value an operator pastes (an event's id, an object's, an
// account's, an event type) without the white space around it, as the
// dashboard's forms read it: a pasted " cus_123" or "acct_1\t" names
// cus_123 or acct_1, where the store, or Stripe, would find none. Every
// flag and argument that takes one reads it through here.
func pasted(s string) string { return strings.TrimSpace(s) }
