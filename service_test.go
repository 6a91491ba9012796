package idempotency_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// service is the service under test against the fake Stripe API:
// invoice.paid has a handler that counts its applications per event (in
// the event's transaction) and records the order in which they committed;
// customer.created has none.
type service struct {
	store idempotency.Store
	pg    *pgBackend // nil on the memory store
	hs    *idempotency.Handlers

	mu      sync.Mutex
	order   []string          // event ids, as their transactions committed
	counts  map[string]int    // applications per event, on the memory store
	account map[string]string // each event's Event.Account, as its handler was given it
	fail    func(eventID string) error
	applied func(eventID string) // after each commit
}

type serviceObject struct {
	ID string `json:"id"`
}

// forEachStore runs fn against a MemoryStore and a PgxStore.
func forEachStore(t *testing.T, fn func(t *testing.T, app *service)) {
	for _, name := range []string{"memory", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newService(t, name))
		})
	}
}

func newService(t *testing.T, store string) *service {
	a := &service{hs: idempotency.NewHandlers(), counts: map[string]int{}, account: map[string]string{}}
	if store == "postgres" {
		a.pg = newPgBackend(t, idempotency.PgxConfig{})
		a.store = a.pg.store
	} else {
		a.store = idempotency.NewMemoryStore()
	}
	idempotency.On(a.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[serviceObject]) error {
		a.mu.Lock()
		fail, applied := a.fail, a.applied
		a.account[ev.ID] = ev.Account
		a.mu.Unlock()
		if fail != nil {
			if err := fail(ev.ID); err != nil {
				return err
			}
		}
		return a.count(ctx, tx, ev.ID, applied)
	})
	return a
}

// count records an application of eventID in tx: a row of counters on
// PostgreSQL, and after the commit the order and, on the memory store,
// the count. applied, when not nil, runs after the commit.
func (a *service) count(ctx context.Context, tx idempotency.Tx, eventID string, applied func(string)) error {
	if a.pg != nil {
		if err := a.pg.add(ctx, tx, eventID, 1); err != nil {
			return err
		}
	}
	tx.AfterCommit(func(context.Context) {
		a.mu.Lock()
		a.order = append(a.order, eventID)
		if a.pg == nil {
			a.counts[eventID]++
		}
		a.mu.Unlock()
		if applied != nil {
			applied(eventID)
		}
	})
	return nil
}

func (a *service) handler(t *testing.T) *idempotency.Handler {
	t.Helper()
	h, err := idempotency.NewHandler(a.store, a.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	return h
}

// inbox returns an Inbox of app's store and handlers on a fake clock, and
// its Handler, which fetches thin events through client when not nil.
func (a *service) inbox(t *testing.T, client *stripe.Client) (*idempotency.Inbox, *idempotency.Handler) {
	t.Helper()
	clock := idempotencytest.NewClock(time.Now())
	in, err := idempotency.NewInbox(a.store, a.hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now, StripeClient: client})
	require.NoError(t, err)
	return in, h
}

// appliedCounts returns how often each event was applied: from the
// database on PostgreSQL, where the count commits with the claim.
func (a *service) appliedCounts(t *testing.T) map[string]int {
	t.Helper()
	if a.pg == nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		return maps.Clone(a.counts)
	}
	return counterValues(t, a.pg.db.Pool, `SELECT name, value FROM counters`)
}

func (a *service) appliedOrder() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.order)
}

// requireAppliedOnce checks that exactly the events ids were applied, each
// once.
func (a *service) requireAppliedOnce(t *testing.T, ids []string) {
	t.Helper()
	want := map[string]int{}
	for _, id := range ids {
		want[id] = 1
	}
	require.Equal(t, want, a.appliedCounts(t))
}
