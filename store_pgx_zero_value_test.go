package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// A PgxStore that NewPgxStore did not make (a zero &PgxStore{}, or a nil
// one) has no database: each of its methods fails naming NewPgxStore, as
// an Inbox's do naming NewInbox, and NewHandler and NewInbox refuse a zero
// one when they are made. Each method panicked on a nil pointer, and a
// Handler on it answered no delivery, an Inbox's Run took its process
// down.
func TestPgxStoreNotMadeByNewPgxStoreIsRefused(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*idempotency.PgxStore{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			refused := refusedNotMade(t, "PgxStore", "a PgxStore not made by NewPgxStore")
			refused("Run", func() error {
				outcome, err := s.Run(ctx, idempotency.Claim{EventID: "evt_1"}, nil)
				require.Equal(t, idempotency.OutcomeFailed, outcome)
				return err
			})
			refused("Ping", func() error { return s.Ping(ctx) })
			refused("Migrate", func() error { return s.Migrate(ctx) })
			refused("LookupEvent", func() error { _, _, err := s.LookupEvent(ctx, "evt_1"); return err })
			refused("ListEvents", func() error { _, err := s.ListEvents(ctx, idempotency.EventFilter{}); return err })
			refused("LookupGuard", func() error { _, _, err := s.LookupGuard(ctx, "scope", "key"); return err })
			refused("Prune", func() error { _, err := s.Prune(ctx, idempotency.Retention{}); return err })
			refused("Forget", func() error { _, err := s.Forget(ctx, "evt_1"); return err })
		})
	}
	t.Run("constructors", func(t *testing.T) {
		t.Parallel()
		_, err := idempotency.NewHandler(&idempotency.PgxStore{}, idempotency.NewHandlers(), idempotency.Config{Secrets: []string{testSecret}})
		require.EqualError(t, err, "idempotency: NewHandler: a PgxStore not made by NewPgxStore")
		_, err = idempotency.NewInbox(&idempotency.PgxStore{}, idempotency.NewHandlers(), idempotency.InboxConfig{})
		require.EqualError(t, err, "idempotency: NewInbox: a PgxStore not made by NewPgxStore")
	})
}
