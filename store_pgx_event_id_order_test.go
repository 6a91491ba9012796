package idempotency_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// icuDatabase creates a database whose default collation is ICU's
// en-US, as most production databases sort text by a language's rules
// (en_US.UTF-8), unlike the test cluster's C; it is dropped when the test
// ends. It returns a pool on it.
func icuDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	admin := pgtest.AdminPool(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "icu_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()
	_, err := admin.Exec(t.Context(), `CREATE DATABASE `+ident+` TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`)
	if err != nil {
		t.Skipf("cannot create a database with an ICU collation: %v", err)
	}
	cfg := admin.Config()
	cfg.ConnConfig.Database = name
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		_, err := admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`)
		require.NoError(t, err)
	})
	return pool
}

// eventIDOrder runs, on store, two events of one invoice received at one
// time, created in one second, whose ids sort apart by bytes and by a
// language's rules ("evt_B" < "evt_a" by bytes, the other way in en-US).
// It returns the order List gives them and the order they were applied
// in.
func eventIDOrder(t *testing.T, store idempotency.Store) (listed, applied []string) {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			applied = append(applied, ev.ID)
		})
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	for _, id := range []string{"evt_a", "evt_B"} {
		a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_order", "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	recs, err := in.List(t.Context(), idempotency.InboxFilter{})
	require.NoError(t, err)
	for _, r := range recs {
		listed = append(listed, r.EventID)
	}
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return listed, applied
}

// PgxStore orders event ids as MemoryStore does, by their bytes, whatever
// the database's collation: List's tie on ReceivedAt (and idemctl list's
// "more", which compares ids in Go), and the order in which two events of
// one object created in the same second are applied. On a database that
// sorts text by en-US rules it listed and applied them in the other order
// than MemoryStore.
func TestPgxStoreOrdersEventIDsByBytes(t *testing.T) {
	t.Parallel()
	wantListed, wantApplied := []string{"evt_a", "evt_B"}, []string{"evt_B", "evt_a"}
	listed, applied := eventIDOrder(t, idempotency.NewMemoryStore())
	require.Equal(t, wantListed, listed, "MemoryStore: newest received first, then the greater id")
	require.Equal(t, wantApplied, applied, "MemoryStore: by (created, event id)")

	pool := icuDatabase(t)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: "icu"})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	listed, applied = eventIDOrder(t, store)
	require.Equal(t, wantListed, listed, "PgxStore on an en-US database: List's order")
	require.Equal(t, wantApplied, applied, "PgxStore on an en-US database: the object's order")
}

// EventFilter.After compares event ids by their bytes, as ListEvents
// orders them, whatever the database's collation, on both stores: a record
// claimed in the position's microsecond comes after the position only when
// its id is smaller by bytes ("evt_a" is not, "evt_B" < "evt_a"). On a
// database that sorts text by en-US rules, where "evt_a" < "evt_B", the
// position's comparison without COLLATE "C" listed evt_a after a position
// of evt_B that it comes before in ListEvents' order: a record listed on
// two pages.
func TestListEventsAfterComparesEventIDsByBytes(t *testing.T) {
	t.Parallel()
	pgx, err := idempotency.NewPgxStore(icuDatabase(t), idempotency.PgxConfig{Schema: "icu"})
	require.NoError(t, err)
	require.NoError(t, pgx.Migrate(t.Context()))
	for name, store := range map[string]idempotencytest.LookupStore{"memory": idempotency.NewMemoryStore(), "postgres on en-US": pgx} {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_a", EventType: "invoice.paid"}, func(context.Context, idempotency.Tx) error { return nil })
		require.NoError(t, err, name)
		rec, ok, err := store.LookupEvent(t.Context(), "evt_a")
		require.NoError(t, err, name)
		require.True(t, ok, name)
		recs, err := store.ListEvents(t.Context(), idempotency.EventFilter{After: idempotency.EventPosition{ProcessedAt: rec.ProcessedAt, EventID: "evt_B"}})
		require.NoError(t, err, name)
		require.Empty(t, recs, "%s: evt_a comes before evt_B in ListEvents' order", name)
		recs, err = store.ListEvents(t.Context(), idempotency.EventFilter{After: idempotency.EventPosition{ProcessedAt: rec.ProcessedAt, EventID: "evt_b"}})
		require.NoError(t, err, name)
		require.Len(t, recs, 1, "%s: evt_a comes after evt_b", name)
	}
}
