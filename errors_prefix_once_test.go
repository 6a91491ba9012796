package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// requirePrefixOnce: err's text starts with "idempotency: " and carries it
// once, and err still wraps want.
func requirePrefixOnce(t *testing.T, err, want error) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.True(t, strings.HasPrefix(err.Error(), "idempotency: "), "no prefix: %s", err)
	require.Equal(t, 1, strings.Count(err.Error(), "idempotency: "), "the prefix repeated: %s", err)
}

// TestErrorTextPrefixOnce: an error of the package that wraps another of
// its own (a sentinel, a validation's error, ErrStoreUnavailable) reads
// "idempotency: " once, at its start, on both stores, and errors.Is still
// finds the sentinel. It read "idempotency: forget: idempotency: invalid
// key: ...", "idempotency: prune: idempotency: store unavailable: ...". A
// text that is not the package's is quoted as it is.
func TestErrorTextPrefixOnce(t *testing.T) {
	t.Parallel()

	t.Run("registration", func(t *testing.T) {
		t.Parallel()
		hs := idempotency.NewHandlers()
		err := onNothing[map[string]any](hs, "invoice.paid\x00")
		requirePrefixOnce(t, err, idempotency.ErrInvalidKey)
		_, err = idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: "a\x00", Key: "invoice id"},
			func(context.Context, idempotency.Tx, string, struct{}) error { return nil })
		requirePrefixOnce(t, err, idempotency.ErrInvalidKey)
	})

	t.Run("permanent", func(t *testing.T) {
		t.Parallel()
		requirePrefixOnce(t, idempotency.Permanent(idempotency.ErrObjectNotFound), idempotency.ErrObjectNotFound)
		requirePrefixOnce(t, &idempotency.PanicError{Value: idempotency.ErrTxDone}, idempotency.ErrTxDone)
		// Not the package's error: quoted as it is, whatever its text.
		own := errors.New("idempotency: the service's own text")
		require.Equal(t, "idempotency: permanent failure: idempotency: the service's own text", idempotency.Permanent(own).Error())
	})

	t.Run("retrieve", func(t *testing.T) {
		t.Parallel()
		fetch := idempotency.Retrieve(func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
			return nil, &stripe.Error{HTTPStatusCode: http.StatusNotFound, Type: stripe.ErrorTypeInvalidRequest, Code: stripe.ErrorCodeResourceMissing}
		})
		_, err := fetch(t.Context(), "sub_1", "")
		requirePrefixOnce(t, err, idempotency.ErrObjectNotFound)
		requirePrefixOnce(t, err, idempotency.ErrStripeAPI)
	})

	for name, store := range bothPruners(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forgetter := store.(interface {
				Forget(context.Context, string) (bool, error)
			})
			_, err := forgetter.Forget(t.Context(), "")
			requirePrefixOnce(t, err, idempotency.ErrInvalidKey)

			inbox, _, _ := queuedInvoice(t, store, idempotency.InboxConfig{}, "evt_prefix_once")
			_, err = inbox.Forget(t.Context(), "evt_prefix_once")
			requirePrefixOnce(t, err, idempotency.ErrUnfinished)

			_, err = store.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }})
			requirePrefixOnce(t, err, idempotency.ErrInvalidKey)

			hs := idempotency.NewHandlers()
			task := idempotency.NewTask(hs, "prefix.once", func(context.Context, idempotency.TaskRun[struct{}]) error { return nil })
			var ended idempotency.Tx
			_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_prefix_once_task", EventType: "invoice.paid"},
				func(_ context.Context, tx idempotency.Tx) error { ended = tx; return nil })
			require.NoError(t, err)
			_, err = task.Enqueue(t.Context(), ended, "k", struct{}{})
			requirePrefixOnce(t, err, idempotency.ErrTxDone)
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		pool, err := pgxpool.New(t.Context(), "postgres://idempotency@127.0.0.1:1/none?connect_timeout=2")
		require.NoError(t, err)
		defer pool.Close()
		store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{})
		require.NoError(t, err)

		_, err = store.Prune(t.Context(), idempotency.Retention{})
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)
		_, err = store.ListEvents(t.Context(), idempotency.EventFilter{})
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)
		_, err = store.Forget(t.Context(), "evt_unreachable")
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)
		inbox, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		_, err = inbox.Stats(t.Context())
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)
		_, err = inbox.WorkDue(t.Context())
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)

		o := newOutage(t, 2)
		h, err := idempotency.NewHandler(store, newService(t, "memory").hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		_, err = h.Recover(t.Context(), o.client, o.opts)
		requirePrefixOnce(t, err, idempotency.ErrStoreUnavailable)
	})
}
