package idempotency_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxStoreNotMigratedNamesTheSchemaSetting: a worker process whose
// PgxConfig.Schema differs from the one the HTTP process stores events in
// was told only to run Migrate on its schema, which would have given it
// an empty inbox of its own to poll while the events waited in the other.
// The hint names the other cure too: the schema the other processes use.
func TestPgxStoreNotMigratedNamesTheSchemaSetting(t *testing.T) {
	t.Parallel()
	db := newPgDB(t)
	served, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, served.Migrate(t.Context()))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	in, err := idempotency.NewInbox(served, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_other_schema", nil), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome)

	other := db.Schema + "_worker" // never created, never migrated
	worker, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: other})
	require.NoError(t, err)
	win, err := idempotency.NewInbox(worker, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	_, err = win.WorkDue(t.Context())
	require.ErrorContains(t, err, `"`+other+`"`)
	require.ErrorContains(t, err, "run PgxStore.Migrate on it first")
	require.ErrorContains(t, err, "or set PgxConfig.Schema to the schema the service's other processes use")
}
