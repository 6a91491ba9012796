package dashboard_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEventPageSaysTheAttemptsLeft: the page of an event or a task still
// to be applied says how many attempts it had out of the inbox's
// MaxAttempts and how many more may come before it is dead-lettered: the
// first thing an operator asks of a failed one. Pending, failed, failed
// before its last attempt, under way (processing) to the last, and by a
// MaxAttempts lowered below the attempts made (one more comes, the
// last, and one under way past it is the last); dead-lettered, the
// count alone. The page said the count alone, the dashboard not knowing
// MaxAttempts.
func TestEventPageSaysTheAttemptsLeft(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	quiet := slog.New(slog.DiscardHandler)
	started, release := make(chan struct{}), make(chan struct{})
	hs := idempotency.NewHandlers()
	notify := idempotency.NewTask(hs, "notify", func(context.Context, idempotency.TaskRun[string]) error {
		return errors.New("mailer down")
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		switch ev.Object.ID {
		case "in_fail":
			return errors.New("ledger down")
		case "in_hang":
			started <- struct{}{}
			<-release
			return errors.New("ledger timed out")
		}
		_, err := notify.Enqueue(ctx, tx, ev.Object.ID, ev.Object.ID)
		return err
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Minute }, Now: clock.Now, Logger: quiet,
	})
	require.NoError(t, err)
	hook, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	dash, err := dashboard.New(dashboard.Config{Inbox: in, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	deliver := func(eventID, objectID string) {
		t.Helper()
		a := idempotencytest.Deliver(hook, eventPayload(t, "invoice.paid", eventID, objectID), secret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	attempts := func(dash *dashboard.Dashboard, id, want string) {
		t.Helper()
		w := httptest.NewRecorder()
		dash.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/event?id="+url.QueryEscape(id), nil))
		require.Equal(t, http.StatusOK, w.Code)
		contains(t, w.Body.String(), `<dd id="attempts">`+want+`</dd>`, id)
	}
	work := func() {
		t.Helper()
		_, err := in.WorkDue(t.Context())
		require.NoError(t, err)
	}

	deliver("evt_fail", "in_fail")
	deliver("evt_ok", "in_ok")
	attempts(dash, "evt_fail", "0 of 3: up to 3 more attempts before it is dead-lettered")
	work()
	attempts(dash, "evt_fail", "1 of 3: up to 2 more attempts before it is dead-lettered")
	attempts(dash, "task:notify:in_ok", "1 of 3: up to 2 more attempts before it is dead-lettered")
	attempts(dash, "evt_ok", "1")
	clock.Advance(time.Minute)
	work()
	attempts(dash, "evt_fail", "2 of 3: 1 more attempt, the last, before it is dead-lettered")
	clock.Advance(time.Minute)
	work()
	attempts(dash, "evt_fail", "3")

	// An attempt under way, each to the last; then a dashboard whose
	// inbox's MaxAttempts is lower than the attempts made (lowered since):
	// one more comes, the last; and the attempt under way is the last,
	// past that MaxAttempts too.
	lowered, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 1, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	loweredDash, err := dashboard.New(dashboard.Config{Inbox: lowered, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	deliver("evt_hang", "in_hang")
	for _, c := range []struct{ underWay, after string }{
		{"1 of 3, under way: if it fails, up to 2 more attempts before it is dead-lettered", "1 of 3: up to 2 more attempts before it is dead-lettered"},
		{"2 of 3, under way: if it fails, up to 1 more attempt before it is dead-lettered", "2 of 3: 1 more attempt, the last, before it is dead-lettered"},
		{"3 of 3, under way: the last; if it fails, or its lease expires, it is dead-lettered", "3"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := in.WorkDue(context.WithoutCancel(t.Context()))
			done <- err
		}()
		<-started
		attempts(dash, "evt_hang", c.underWay)
		attempts(loweredDash, "evt_hang", c.underWay[:1]+" of 1, under way: the last; if it fails, or its lease expires, it is dead-lettered")
		release <- struct{}{}
		require.NoError(t, <-done)
		attempts(dash, "evt_hang", c.after)
		if c.after != "3" {
			attempts(loweredDash, "evt_hang", c.after[:1]+" of 1: 1 more attempt, the last, before it is dead-lettered")
		}
		clock.Advance(time.Minute)
	}
	require.Equal(t, idempotency.InboxDeadLetter, record(t, in, "evt_hang").State)
}
