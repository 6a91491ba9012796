package idempotency

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Concurrent copies of each event, some of whose deliveries give up
// before, while or after their shared insert runs: every 200 stands for a
// stored row, no event is reported stored twice, and an event whose
// deliveries all got an answer other than 503 was reported stored once.
func TestPgxIngestStressGivingUp(t *testing.T) {
	t.Parallel()
	s, db := newIngestStore(t)
	const ids, copies = 60, 4
	type answer struct {
		ok  bool
		err error
	}
	answers := make([][]answer, ids)
	for i := range answers {
		answers[i] = make([]answer, copies)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range copies {
		for i := range ids {
			wg.Go(func() {
				<-start
				var ctx context.Context
				var cancel context.CancelFunc
				switch (i + c) % 4 {
				case 0: // gave up before it arrived
					ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
				case 1: // gives up soon, maybe while its batch runs
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
				default:
					ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
				}
				defer cancel()
				ok, err := s.inboxEnqueue(ctx, ingestRow(fmt.Sprintf("evt_stress_%d", i)))
				answers[i][c] = answer{ok, err}
			})
		}
	}
	close(start)
	wg.Wait()
	rows, err := db.Pool.Query(t.Context(), `SELECT event_id FROM idempotency_inbox`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, id := range got {
		stored[id] = true
	}
	for i := range ids {
		id := fmt.Sprintf("evt_stress_%d", i)
		queued, failed := 0, 0
		for c, a := range answers[i] {
			switch {
			case a.err != nil:
				failed++
			case a.ok:
				queued++
				require.True(t, stored[id], "%s copy %d reported stored", id, c)
			default:
				require.True(t, stored[id], "%s copy %d reported a duplicate", id, c)
			}
		}
		require.LessOrEqual(t, queued, 1, "%s reported stored %d times", id, queued)
		if failed == 0 {
			require.Equal(t, 1, queued, "%s: every copy answered 200, one of them queued", id)
		}
	}
}
