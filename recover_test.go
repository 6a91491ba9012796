package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// outageEvent is an event Stripe created during a simulated outage.
type outageEvent struct {
	id, typ string
	created int64
	raw     []byte
}

// outageRun is a fake Stripe API holding the events created during a
// simulated outage, and the options that recover them.
type outageRun struct {
	f       *fakeStripe
	client  *stripe.Client
	events  []outageEvent // in creation order
	handled []string      // the invoice.paid events' ids, in creation order
	opts    idempotency.RecoverOptions
}

// newOutage serves n events created over the 4 days that ended an hour
// ago: every 10th a customer.created (no handler), the rest invoice.paid,
// each about its own invoice; every 25th in the same second as the one
// before it. The options recover the last 5 days.
func newOutage(t *testing.T, n int) *outageRun {
	t.Helper()
	o := &outageRun{f: newFakeStripe()}
	o.client = o.f.serve(t)
	now := time.Now()
	o.opts.Since = now.Add(-5 * 24 * time.Hour)
	start := now.Add(-time.Hour - 4*24*time.Hour).Unix()
	step := int64(4*24*time.Hour/time.Second) / int64(n)
	o.events = make([]outageEvent, n)
	for i := range o.events {
		ev := &o.events[i]
		ev.id, ev.typ, ev.created = fmt.Sprintf("evt_outage_%03d", i), "invoice.paid", start+int64(i)*step
		if i%10 == 9 {
			ev.typ = "customer.created"
		}
		if i%25 == 24 {
			ev.created = o.events[i-1].created
		}
		ev.raw = snapshotEvent(t, ev.id, ev.typ, fmt.Sprintf("in_outage_%03d", i), ev.created)
		o.f.add(ev.raw)
	}
	o.handled = ids(o.events, "invoice.paid")
	return o
}

// ids returns the ids of events whose type is typ ("" for all).
func ids(events []outageEvent, typ string) []string {
	var out []string
	for _, ev := range events {
		if typ == "" || ev.typ == typ {
			out = append(out, ev.id)
		}
	}
	return out
}

// TestRecoverAfterOutage: the endpoint was down for 4 days, during which
// Stripe created 500 events; some were delivered (before the outage, or
// resent since). Recover applies every handled event exactly once, oldest
// first, counts the delivered ones as duplicates, and a second run of the
// checkpoint finds nothing new: it lists the last events again, from
// RecoveryOverlap before the checkpoint's, as duplicates, in two requests.
func TestRecoverAfterOutage(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 500)
		f, client, events := o.f, o.client, o.events
		h := app.handler(t)

		var delivered []string
		for i := 0; i < len(events); i += 9 {
			if events[i].typ == "invoice.paid" {
				require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, events[i].raw, testSecret).Outcome)
				delivered = append(delivered, events[i].id)
			}
		}
		handled := o.handled

		opts := idempotency.RecoverOptions{Since: o.opts.Since, Checkpoint: "outage"}
		rep, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		t.Logf("500 events over 4 days: %d requests", rep.Requests)
		require.Equal(t, idempotency.RecoverReport{
			Listed: 500, Processed: len(handled) - len(delivered), Duplicate: len(delivered), Ignored: 50,
			Requests: len(f.calls()), LastEventID: events[499].id,
		}, rep)
		app.requireAppliedOnce(t, handled)
		recovered := slices.DeleteFunc(slices.Clone(handled), func(id string) bool { return slices.Contains(delivered, id) })
		require.Equal(t, recovered, app.appliedOrder()[len(delivered):], "oldest first, same-second events in Stripe's order")
		require.LessOrEqual(t, rep.Requests, 5+1+12, "5 pages, the last empty one, and the search for the oldest")

		calls := len(f.calls())
		again, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		// evt_outage_499 (customer.created) shares its second with 498.
		require.Equal(t, idempotency.RecoverReport{Listed: 2, Duplicate: 1, Ignored: 1, Requests: 2, Resumed: true, LastEventID: events[499].id}, again)
		requireListedFromOverlap(t, f.calls()[calls], events[499].created)
		app.requireAppliedOnce(t, handled)

		if app.pg != nil {
			var last string
			require.NoError(t, app.pg.db.Pool.QueryRow(t.Context(),
				`SELECT "last_event_id" FROM "`+app.pg.db.Schema+`"."idempotency_recovery" WHERE "name" = 'outage'`).Scan(&last))
			require.Equal(t, events[499].id, last)
		}
	})
}

// TestRecoverResumesAfterCancel: a run cancelled mid-way finishes the
// event in hand, keeps its checkpoint, and the next run starts
// RecoveryOverlap before it: every event applied once, only the overlap's
// listed twice.
func TestRecoverResumesAfterCancel(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 500)
		f, client, handled := o.f, o.client, o.handled
		h := app.handler(t)

		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		app.applied = func(string) {
			if n++; n == 200 {
				cancel()
			}
		}
		opts := idempotency.RecoverOptions{Since: o.opts.Since, Checkpoint: "cancelled", PageSize: 50}
		first, err := h.Recover(ctx, client, opts)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 200, first.Processed)
		require.Equal(t, handled[199], first.LastEventID)

		app.applied = nil
		calls := len(f.calls())
		second, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.True(t, second.Resumed)
		last := slices.IndexFunc(o.events, func(ev outageEvent) bool { return ev.id == handled[199] })
		requireListedFromOverlap(t, f.calls()[calls], o.events[last].created)
		again := overlapped(o.events, handled[199])
		require.Equal(t, len(handled)-200, second.Processed)
		require.Equal(t, 500+len(again), first.Listed+second.Listed, "only the overlap listed twice")
		require.Equal(t, len(ids(again, "invoice.paid")), second.Duplicate)
		app.requireAppliedOnce(t, handled)
		require.Equal(t, handled, app.appliedOrder())
	})
}

// TestRecoverResumesAfterAPIFailures: a burst of 503s (or 429s) from the
// API longer than Recover's retries (6 answers to one page) stops the run
// with ErrStripeAPI, what it did kept; once the burst is over the
// checkpoint's next run finishes, each event applied once. The retries
// wait a millisecond, not a second.
func TestRecoverResumesAfterAPIFailures(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			forEachStore(t, func(t *testing.T, app *service) {
				o := newOutage(t, 500)
				f, client, handled := o.f, o.client, o.handled
				h := app.handler(t)

				pages := 0
				f.fail = func(_ int, r *http.Request) int {
					if r.URL.Query().Get("ending_before") != "" {
						if pages++; pages >= 3 && pages < 9 { // the 3rd page on, for 6 requests
							return status
						}
					}
					return 0
				}
				opts := idempotency.RecoverOptions{Since: o.opts.Since, Checkpoint: "burst", PageSize: 50}
				first, err := idempotency.RecoverWithBackoff(t.Context(), h, client, opts, time.Millisecond)
				require.ErrorIs(t, err, idempotency.ErrStripeAPI)
				require.Contains(t, err.Error(), fmt.Sprintf("HTTP %d", status))
				require.NotContains(t, err.Error(), fakeStripeKey)
				require.Less(t, first.Listed, 150, "the oldest events and two pages")
				require.Positive(t, first.Listed)
				require.NotEmpty(t, first.LastEventID)

				f.mu.Lock()
				f.fail = nil // the burst is over
				f.mu.Unlock()
				second, err := h.Recover(t.Context(), client, opts)
				require.NoError(t, err)
				require.True(t, second.Resumed)
				again := overlapped(o.events, first.LastEventID)
				require.Equal(t, 500+len(again), first.Listed+second.Listed, "only the overlap listed twice")
				require.Equal(t, len(ids(again, "invoice.paid")), second.Duplicate)
				app.requireAppliedOnce(t, handled)
			})
		})
	}
}

// TestRecoverFailedEventHoldsTheCheckpoint: an event whose handler fails
// is counted and named, the run goes on, and the checkpoint stays before
// it; the next run applies it and finds the later ones duplicates.
func TestRecoverFailedEventHoldsTheCheckpoint(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 300)
		client, events, handled := o.client, o.events, o.handled
		failing := events[120]
		require.Equal(t, "invoice.paid", failing.typ)
		app.fail = func(id string) error {
			if id == failing.id {
				return errors.New("the accounting service is down")
			}
			return nil
		}
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: o.opts.Since, Checkpoint: "failing"}
		first, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.Equal(t, 1, first.Failed)
		require.Equal(t, []string{failing.id}, first.FailedIDs)
		require.Equal(t, len(handled)-1, first.Processed)
		require.Equal(t, events[119].id, first.LastEventID, "the checkpoint stays before the failed event")

		app.fail = nil
		second, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.Equal(t, 1, second.Processed)
		require.Equal(t, len(ids(events[121:], "invoice.paid")), second.Duplicate)
		require.Equal(t, events[299].id, second.LastEventID)
		app.requireAppliedOnce(t, handled)
	})
}

// TestRecoverReportNamesTheFirst1000Failures: every failed event is
// counted, and FailedIDs names the first 1000 of them in the order they
// were met.
func TestRecoverReportNamesTheFirst1000Failures(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 1200)
	app.fail = func(string) error { return errors.New("the accounting service is down") }
	opts := o.opts
	opts.RequestsPerSecond = 100
	rep, err := app.handler(t).Recover(t.Context(), o.client, opts)
	require.NoError(t, err)
	require.Equal(t, len(o.handled), rep.Failed)
	require.Greater(t, rep.Failed, 1000)
	require.Equal(t, o.handled[:1000], rep.FailedIDs)
	require.Empty(t, rep.LastEventID, "the checkpoint stays before the first failure")
}

// TestRecoverInbox: through an Inbox's Handler, recovered events are
// stored (queued) rather than applied, those in the inbox already are
// duplicates, and the workers apply each once.
func TestRecoverInbox(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 500)
		client, events, handled := o.client, o.events, o.handled
		in, h := app.inbox(t, nil)
		delivered := 0
		for i := 0; i < len(events); i += 7 {
			if events[i].typ == "invoice.paid" {
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, events[i].raw, testSecret).Outcome)
				delivered++
			}
		}

		rep, err := h.Recover(t.Context(), client, o.opts)
		require.NoError(t, err)
		require.Equal(t, len(handled)-delivered, rep.Queued)
		require.Equal(t, delivered, rep.Duplicate)
		require.Equal(t, 50, rep.Ignored)
		require.Zero(t, rep.Processed)
		require.Empty(t, app.appliedCounts(t), "nothing applied before the workers run")

		attempts, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, len(handled), attempts)
		app.requireAppliedOnce(t, handled)
	})
}

// TestRecoverManyEventsInOneSecond: more than a page of events in the
// first second: the search for the oldest pages through that second, and
// every event is applied once in creation order.
func TestRecoverManyEventsInOneSecond(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	second := now.Add(-time.Hour).Unix()
	var all []string
	for i := range 280 {
		created := second
		if i >= 250 {
			created = second + int64(i)
		}
		id := fmt.Sprintf("evt_second_%03d", i)
		f.add(snapshotEvent(t, id, "invoice.paid", "in_"+id, created))
		all = append(all, id)
	}
	h := app.handler(t)
	var progress []int
	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), RequestsPerSecond: 100,
		OnPage: func(r idempotency.RecoverReport) { progress = append(progress, r.Listed) }})
	require.NoError(t, err)
	require.Equal(t, 280, rep.Processed)
	require.GreaterOrEqual(t, len(progress), 3, "OnPage after each page of at most 100")
	require.True(t, slices.IsSorted(progress) && len(slices.Compact(slices.Clone(progress))) == len(progress), "totals so far, growing: %v", progress)
	require.Equal(t, 280, progress[len(progress)-1], "the last page's totals are the report's")
	require.Equal(t, all, app.appliedOrder())
	app.requireAppliedOnce(t, all)
	var walked int
	for _, c := range f.calls() {
		if c.Query.Get("starting_after") != "" {
			walked++
			require.Equal(t, fmt.Sprint(second+1), c.Query.Get("created[lt]"), "paging within the first second")
		}
	}
	require.Equal(t, 2, walked, "250 events of one second: two more pages after the first")
}

// TestRecoverFilters: Types and OnlyUndelivered reach the Events API as
// types[] and delivery_success=false, and only what they select is
// handled.
func TestRecoverFilters(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 100)
	f, client, events := o.f, o.client, o.events
	var undelivered []string
	for i, ev := range events {
		if i%3 == 0 {
			f.setDelivered(ev.id)
		} else if ev.typ == "invoice.paid" {
			undelivered = append(undelivered, ev.id)
		}
	}
	h := app.handler(t)
	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: o.opts.Since, Types: []string{"invoice.paid"}, OnlyUndelivered: true,
	})
	require.NoError(t, err)
	require.Equal(t, len(undelivered), rep.Listed)
	require.Equal(t, len(undelivered), rep.Processed)
	app.requireAppliedOnce(t, undelivered)
	for _, c := range f.calls() {
		require.Equal(t, "false", c.Query.Get("delivery_success"))
		require.Equal(t, "invoice.paid", c.Query.Get("types[0]"))
		require.Equal(t, fmt.Sprint(o.opts.Since.Unix()), c.Query.Get("created[gte]"))
	}
}

// TestRecoverRefusesBadInput: bad options and starts outside the 30-day
// window fail with a clear error before any request, and leave the
// checkpoint as it was.
func TestRecoverRefusesBadInput(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for i := range 20 {
		f.add(snapshotEvent(t, fmt.Sprintf("evt_bad_%02d", i), "invoice.paid", fmt.Sprintf("in_%d", i), now.Add(-time.Duration(20-i)*time.Hour).Unix()))
	}
	h := app.handler(t)
	base := idempotency.RecoverOptions{Since: now.Add(-2 * 24 * time.Hour), Now: clock, Checkpoint: "bad", Types: []string{"invoice.paid"}}
	rep, err := h.Recover(t.Context(), client, base)
	require.NoError(t, err)
	require.Equal(t, "evt_bad_19", rep.LastEventID)
	calls := len(f.calls())

	with := func(change func(o *idempotency.RecoverOptions)) idempotency.RecoverOptions {
		o := base
		change(&o)
		return o
	}
	cases := []struct {
		name   string
		opts   idempotency.RecoverOptions
		client *stripe.Client
		is     error
		says   string
	}{
		{"no since", with(func(o *idempotency.RecoverOptions) { o.Since = time.Time{} }), client, nil, "Since is required"},
		{"since in the future", with(func(o *idempotency.RecoverOptions) { o.Since = now.Add(time.Minute) }), client, nil, "in the future"},
		{"since beyond 30 days", with(func(o *idempotency.RecoverOptions) {
			o.Since = now.Add(-idempotency.RecoveryWindow - time.Minute - time.Second)
			o.Checkpoint = ""
		}), client, idempotency.ErrRecoveryWindow, "RecoverOptions.Since"},
		{"checkpoint beyond 30 days", with(func(o *idempotency.RecoverOptions) {
			later := now.Add(idempotency.RecoveryWindow)
			o.Now = func() time.Time { return later }
		}), client, idempotency.ErrRecoveryWindow, `checkpoint "bad"`},
		{"other types", with(func(o *idempotency.RecoverOptions) { o.Types = nil }), client, idempotency.ErrCheckpointMismatch, "RecoverOptions.Types"},
		{"only undelivered", with(func(o *idempotency.RecoverOptions) { o.OnlyUndelivered = true }), client, idempotency.ErrCheckpointMismatch, "RecoverOptions.OnlyUndelivered false, not true"},
		{"earlier since", with(func(o *idempotency.RecoverOptions) { o.Since = o.Since.Add(-time.Second) }), client, idempotency.ErrCheckpointMismatch, "RecoverOptions.Since"},
		{"21 types", with(func(o *idempotency.RecoverOptions) { o.Types = make([]string, 21) }), client, nil, "at most 20"},
		{"empty type", with(func(o *idempotency.RecoverOptions) { o.Types = []string{""} }), client, idempotency.ErrInvalidKey, "Types[0] is empty"},
		{"rate over 100", with(func(o *idempotency.RecoverOptions) { o.RequestsPerSecond = 101 }), client, nil, "RequestsPerSecond"},
		{"negative rate", with(func(o *idempotency.RecoverOptions) { o.RequestsPerSecond = -1 }), client, nil, "RequestsPerSecond"},
		{"NaN rate", with(func(o *idempotency.RecoverOptions) { o.RequestsPerSecond = math.NaN() }), client, nil, "RecoverOptions.RequestsPerSecond is NaN"},
		{"page over 100", with(func(o *idempotency.RecoverOptions) { o.PageSize = 101 }), client, nil, "PageSize"},
		{"negative page", with(func(o *idempotency.RecoverOptions) { o.PageSize = -1 }), client, nil, "RecoverOptions.PageSize is -1"},
		{"checkpoint name with NUL", with(func(o *idempotency.RecoverOptions) { o.Checkpoint = "a\x00b" }), client, idempotency.ErrInvalidKey, "Checkpoint"},
		{"other account", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_1" }), client, idempotency.ErrCheckpointMismatch, "the platform's own account"},
		{"account without acct_", with(func(o *idempotency.RecoverOptions) { o.Account = "1Abc" }), client, nil, "RecoverOptions.Account is not a connected account's id (acct_...)"},
		{"account with a line end", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_1\n" }), client, nil, "RecoverOptions.Account has white space or a control character"},
		{"account with a space", with(func(o *idempotency.RecoverOptions) { o.Account = " acct_1" }), client, nil, "RecoverOptions.Account is not a connected account's id"},
		{"account with NUL", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_1\x00" }), client, nil, "RecoverOptions.Account has white space or a control character"},
		{"account path", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_1/acct_2" }), client, nil, "RecoverOptions.Account is a path of accounts"},
		{"account not UTF-8", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_\xff" }), client, nil, "RecoverOptions.Account is not valid UTF-8"},
		{"account of 256 bytes", with(func(o *idempotency.RecoverOptions) { o.Account = "acct_" + strings.Repeat("a", 251) }), client, nil, "RecoverOptions.Account is 256 bytes long (at most 255)"},
		{"nil client", base, nil, nil, "Recover's client is nil or not made by stripe.NewClient"},
		{"zero client", base, new(stripe.Client), nil, "Recover's client is nil or not made by stripe.NewClient"},
	}
	for _, c := range cases {
		rep, err := h.Recover(t.Context(), c.client, c.opts)
		require.Error(t, err, c.name)
		if c.is != nil {
			require.ErrorIs(t, err, c.is, c.name)
		}
		require.Contains(t, err.Error(), c.says, c.name)
		require.Zero(t, rep.Requests, c.name)
	}
	require.Len(t, f.calls(), calls, "no request made")

	// The checkpoint is as it was: a later Since continues it.
	rep, err = h.Recover(t.Context(), client, with(func(o *idempotency.RecoverOptions) { o.Since = o.Since.Add(time.Hour) }))
	require.NoError(t, err)
	require.Equal(t, idempotency.RecoverReport{Listed: 1, Duplicate: 1, Requests: 2, Resumed: true, LastEventID: "evt_bad_19"}, rep)
	requireListedFromOverlap(t, f.calls()[calls], now.Add(-time.Hour).Unix())
}

// addPaidEvents adds n invoice.paid events of one invoice to f,
// evt_<name>_00 and on, one a second from an hour before now.
func addPaidEvents(t *testing.T, f *fakeStripe, name string, n int, now time.Time) {
	t.Helper()
	for i := range n {
		f.add(snapshotEvent(t, paidEventID(name, i), "invoice.paid", "in_"+name, now.Add(-time.Hour).Unix()+int64(i)))
	}
}

// paidEventID is the id addPaidEvents gives the ith event of name.
func paidEventID(name string, i int) string { return fmt.Sprintf("evt_%s_%02d", name, i) }

// TestRecoverRate: requests are spaced by 1/RequestsPerSecond, 10 a second
// by default, measured on testing/synctest's fake clock: deterministic,
// and without waiting.
func TestRecoverRate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate float64
		gap  time.Duration
	}{{4, 250 * time.Millisecond}, {0, 100 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeStripe()
			now := time.Now()
			addPaidEvents(t, f, "rate", 95, now)
			app := newService(t, "memory")
			rep, err := app.handler(t).Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{
				Since: now.Add(-2 * time.Hour), PageSize: 10, RequestsPerSecond: c.rate,
			})
			require.NoError(t, err)
			require.Equal(t, 95, rep.Processed)
			calls := f.calls()
			require.Len(t, calls, rep.Requests)
			require.GreaterOrEqual(t, len(calls), 10)
			for i := 1; i < len(calls); i++ {
				require.Equal(t, c.gap, calls[i].At.Sub(calls[i-1].At), "request %d", i)
			}
		})
	}
}

// TestRecoverTinyRate: a rate so small that the gap between requests is
// longer than the longest time.Duration still spaces them (the gap did
// not wrap to a negative one, which sent every request at once).
func TestRecoverTinyRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStripe()
		now := time.Now()
		addPaidEvents(t, f, "tiny", 30, now)
		app := newService(t, "memory")
		ctx, cancel := context.WithTimeout(t.Context(), 24*time.Hour)
		defer cancel()
		_, err := app.handler(t).Recover(ctx, f.inProcess(), idempotency.RecoverOptions{
			Since: now.Add(-2 * time.Hour), PageSize: 10, RequestsPerSecond: 1e-10,
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, f.calls(), 1, "one request in a day at 1e-10 requests a second")
	})
}

// TestRecoverStopsWhenTheStoreIsDown: a store that cannot be reached
// stops the run with ErrStoreUnavailable at the first event, which is not
// counted; the next run lists it again.
func TestRecoverStopsWhenTheStoreIsDown(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 40)
	down, err := idempotency.NewHandler(unavailableStore{}, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	rep, err := down.Recover(t.Context(), o.client, o.opts)
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	require.Contains(t, err.Error(), o.events[0].id)
	require.Zero(t, rep.Listed)
	require.Equal(t, 1, rep.Requests, "no request after the store failed")

	rep, err = app.handler(t).Recover(t.Context(), o.client, o.opts)
	require.NoError(t, err)
	require.Equal(t, 40, rep.Listed)
	app.requireAppliedOnce(t, o.handled)
}

// TestRecoverLogsNoPayload: what Recover logs names events and counts,
// never a payload or the key.
func TestRecoverLogsNoPayload(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	o := newOutage(t, 30)
	client, events := o.client, o.events
	app.fail = func(id string) error {
		if id == events[3].id {
			return errors.New("downstream refused")
		}
		return nil
	}
	log, buf := testLogger()
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
	require.NoError(t, err)
	_, err = h.Recover(t.Context(), client, o.opts)
	require.NoError(t, err)
	out := buf.String()
	require.Contains(t, out, `"msg":"stripe recovery: event failed; the checkpoint stays before it"`)
	require.Contains(t, out, events[3].id)
	require.Contains(t, out, `"msg":"stripe recovery: done"`)
	require.NotContains(t, out, "in_outage_", "no payload field")
	require.NotContains(t, out, fakeStripeKey)
	require.False(t, strings.Contains(out, "amount_paid"))
}

// TestRecoverTheWholeWindow: a Since of time.Now() less RecoveryWindow,
// the whole window as a user writes it, is accepted; it read the clock
// before Recover did, and was refused for being microseconds too early.
func TestRecoverTheWholeWindow(t *testing.T) {
	t.Parallel()
	f := newFakeStripe()
	addPaidEvents(t, f, "window", 3, time.Now())
	app := newService(t, "memory")
	rep, err := app.handler(t).Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{
		Since: time.Now().Add(-idempotency.RecoveryWindow),
	})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Processed, "%+v", rep)
}
