package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// roundTrips counts what a connection sends to PostgreSQL: each query
// (COMMIT included) and each batch is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestPgxRoundTrips counts the round trips of one delivery through the
// handler on PostgreSQL: an action declared KeyIsObjectID has its guard
// claimed in the claim's round trip.
func TestPgxRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		keyIsObjectID  bool
		newEvent, twin int64 // round trips
	}{
		{keyIsObjectID: false, newEvent: 4, twin: 3},
		{keyIsObjectID: true, newEvent: 3, twin: 2},
	} {
		name := "guard-in-handler"
		if tt.keyIsObjectID {
			name = "guard-with-claim"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt := &roundTrips{}
			// One connection, so that the warm-up prepares every statement
			// the counted deliveries use.
			db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
				c.MaxConns = 1
				c.ConnConfig.Tracer = rt
			})
			store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
			require.NoError(t, err)
			require.NoError(t, store.Migrate(t.Context()))
			_, err = db.Pool.Exec(t.Context(), `CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)`)
			require.NoError(t, err)
			b := &pgBackend{db: db, store: store}

			hs := idempotency.NewHandlers()
			grant := idempotency.NewAction(hs, idempotency.ActionSpec{
				Name: "grant", Key: "invoice id", Owners: []string{"invoice.paid", "invoice.payment_succeeded"},
				KeyIsObjectID: tt.keyIsObjectID,
			}, func(ctx context.Context, tx idempotency.Tx, _ string, account string) error {
				return b.add(ctx, tx, account, 100)
			})
			onInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[struct {
				ID       string            `json:"id"`
				Metadata map[string]string `json:"metadata"`
			}]) error {
				_, err := grant.Do(ctx, tx, ev.Object.ID, ev.Object.Metadata["account_id"])
				return err
			}
			idempotency.On(hs, "invoice.paid", onInvoice)
			idempotency.On(hs, "invoice.payment_succeeded", onInvoice)
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)

			deliver := func(payload []byte, want idempotency.Outcome) int64 {
				t.Helper()
				before := rt.n.Load()
				a := idempotencytest.Deliver(h, payload, testSecret)
				require.Equal(t, http.StatusOK, a.Status)
				require.Equal(t, want, a.Outcome)
				return rt.n.Load() - before
			}
			twinOf := func(eventID, invoiceID string) []byte {
				var ev map[string]any
				require.NoError(t, json.Unmarshal(invoicePayload(t, eventID, invoiceID, "acct_rt"), &ev))
				ev["type"] = "invoice.payment_succeeded"
				p, err := json.Marshal(ev)
				require.NoError(t, err)
				return p
			}
			deliver(invoicePayload(t, "evt_warm", "in_warm", "acct_rt"), idempotency.OutcomeProcessed)
			deliver(twinOf("evt_warm_twin", "in_warm"), idempotency.OutcomeProcessed)

			newEvent := invoicePayload(t, "evt_rt", "in_rt", "acct_rt")
			require.Equal(t, tt.newEvent, deliver(newEvent, idempotency.OutcomeProcessed), "a new event")
			require.Equal(t, tt.twin, deliver(twinOf("evt_rt_twin", "in_rt"), idempotency.OutcomeProcessed), "a twin: another event id, same invoice")
			require.Equal(t, int64(0), deliver(newEvent, idempotency.OutcomeDuplicate), "a duplicate this process committed")
			require.Equal(t, 200, b.get(t, "acct_rt"), "two invoices, credited once each")
		})
	}
}
