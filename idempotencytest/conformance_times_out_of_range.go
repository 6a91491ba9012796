package idempotencytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testTimesOutOfRangeRefusedAlike: a Claim.ReceivedAt or a CheckOrder
// created outside the years 1 to 9999 (the range of an event's created
// and of the filters' bounds) is refused with ErrInvalidKey by every store
// before anything runs, and one inside it is kept. Unchecked, PostgreSQL
// fails such a claim with "timestamp out of range" on every retry (the
// year -5000, the year 300000), and pgx stores the year 1970 for a time
// past what it encodes (time.Unix(1<<62, 0)), where a memory store keeps
// the time given.
func testTimesOutOfRangeRefusedAlike(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	bad := []time.Time{
		time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1<<62, 0),
	}
	for i, at := range bad {
		ran := 0
		id := fmt.Sprintf("evt_range_received_%d", i)
		out, err := b.Store.Run(ctx, idempotency.Claim{EventID: id, EventType: "invoice.paid", ReceivedAt: at}, refusedApply(b, &ran))
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Claim.ReceivedAt %s", at)
		require.Equal(t, idempotency.OutcomeFailed, out)
		require.Zero(t, ran, "the handler ran for Claim.ReceivedAt %s", at)
		requireNoEvent(t, b, id)

		id = fmt.Sprintf("evt_range_order_%d", i)
		out, err = b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
			_, err := idempotency.CheckOrder(ctx, tx, "sub", "sub_range", at)
			return err
		})
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "CheckOrder created %s", at)
		require.Equal(t, idempotency.OutcomeFailed, out)
		requireNoEvent(t, b, id)
	}
	require.Equal(t, 0, b.Get(t, "c"))

	// The last second of the range is kept as given.
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	_, err := b.Store.Run(ctx, idempotency.Claim{EventID: "evt_range_last", EventType: "invoice.paid", ReceivedAt: last}, addOne(b, "c"))
	require.NoError(t, err)
	rec := requireEvent(t, b, "evt_range_last", idempotency.OutcomeProcessed)
	require.True(t, rec.ReceivedAt.Equal(last), "received at %s, kept as %s", last, rec.ReceivedAt)
	require.Equal(t, 1, b.Get(t, "c"))
}
