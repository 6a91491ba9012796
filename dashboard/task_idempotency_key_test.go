package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// TestTaskPageShowsItsIdempotencyKey: a task's page shows the idempotency
// key every attempt of it got (TaskRun.IdempotencyKey), by which the
// operator finds its requests in the provider's log; and a finished task
// that took more than one attempt says that an attempt before the last
// may have had its effect all the same. A customer who got two welcome
// emails from one task showed "Attempts 2" and nothing more: neither
// what the attempts mean nor what to look the emails up by. An event's
// page has neither: its attempts roll back.
func TestTaskPageShowsItsIdempotencyKey(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			clock := idempotencytest.NewClock(time.Now())
			hs := idempotency.NewHandlers()
			var keys []string // the keys the attempts got; WorkDue runs them on the test's goroutine
			welcome := idempotency.NewTask(hs, "send-welcome-email", func(_ context.Context, run idempotency.TaskRun[string]) error {
				keys = append(keys, run.IdempotencyKey)
				if run.Key == "cus_twice" && run.Attempt == 1 {
					return errors.New("mailer: context deadline exceeded") // the provider had accepted it
				}
				return nil
			})
			idempotency.On(hs, "customer.subscription.created", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
				_, err := welcome.Enqueue(ctx, tx, ev.Object.ID, ev.Object.ID)
				return err
			})
			quiet := slog.New(slog.DiscardHandler)
			inbox, err := idempotency.NewInbox(st, hs, idempotency.InboxConfig{MaxAttempts: 3, Now: clock.Now, Logger: quiet})
			require.NoError(t, err)
			hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: quiet})
			require.NoError(t, err)
			dash, err := dashboard.New(dashboard.Config{Inbox: inbox, Ledger: st, Now: clock.Now, Logger: quiet})
			require.NoError(t, err)
			srv := httptest.NewServer(dash)
			t.Cleanup(srv.Close)
			get := func(path string) string {
				t.Helper()
				resp, err := plainClient.Get(srv.URL + "/" + path)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, path)
				return readAll(t, resp)
			}
			for _, id := range []string{"cus_once", "cus_twice"} {
				ans := idempotencytest.Deliver(hook, eventPayload(t, "customer.subscription.created", "evt_"+id, id), secret)
				require.Equal(t, idempotency.OutcomeQueued, ans.Outcome, ans.Body)
			}
			for range 3 {
				_, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
				clock.Advance(time.Hour) // past the backoff
			}
			require.Len(t, keys, 3)
			require.Equal(t, keys[1], keys[2], "every attempt of one task gets one key")

			for _, c := range []struct {
				key      string
				attempts string
			}{
				{"cus_once", `<dd id="attempts">1</dd>`},
				{"cus_twice", `<dd id="attempts">2: an attempt before the last failed or lost its worker, and may have had its effect all the same: ` +
					`look at the provider&#39;s log for the idempotency key</dd>`},
			} {
				id := "task:send-welcome-email:" + c.key
				require.Equal(t, idempotency.InboxProcessed, record(t, inbox, id).State)
				sum := sha256.Sum256([]byte(id)) // computed apart from the library's
				want := "send-welcome-email-" + hex.EncodeToString(sum[:])
				require.Contains(t, keys, want, "the key the task's func got")
				body := get("event?id=" + url.QueryEscape(id))
				contains(t, body, `<dt>Idempotency key</dt><dd class="id" id="idempotency-key">`+want+`</dd>`, c.key)
				contains(t, body, c.attempts, c.key)
			}
			body := get("event?id=evt_cus_twice")
			notContains(t, body, "idempotency-key", "an event")
			notContains(t, body, "look at the provider", "an event")
		})
	}
}
