package idempotency

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInboxOrderModel adds and removes thousands of rows, many received in
// the same microsecond, to an inboxOrder, its blocks splitting and
// emptying, and checks after each batch that it holds exactly the rows a
// sorted slice holds, and that a walk down from any position, one of its
// rows or none, yields the rows of the slice before it.
func TestInboxOrderModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(38, 1))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var o inboxOrder
	var model []*memoryInboxRow // in order
	position := func() InboxPosition {
		return InboxPosition{ReceivedAt: at.Add(time.Duration(rng.IntN(400)) * time.Microsecond), EventID: fmt.Sprintf("evt_%03d", rng.IntN(1000))}
	}
	for batch := range 60 {
		grow := batch%20 < 12 // grow, then shrink, three times
		for range 200 {
			if len(model) > 0 && (!grow && rng.IntN(4) > 0 || rng.IntN(4) == 0) {
				i := rng.IntN(len(model))
				o.remove(model[i])
				model = slices.Delete(model, i, i+1)
				continue
			}
			p := position()
			i, found := slices.BinarySearchFunc(model, p, func(r *memoryInboxRow, p InboxPosition) int { return comparePosition(r.Position(), p) })
			r := &memoryInboxRow{inboxRow: inboxRow{InboxRecord: InboxRecord{ReceivedAt: p.ReceivedAt, EventID: p.EventID}}}
			if found { // a row not there is not removed
				o.remove(r)
				continue
			}
			o.insert(r)
			model = slices.Insert(model, i, r)
		}
		require.Equal(t, len(model), o.n, "batch %d", batch)
		for _, rows := range o.blocks {
			require.NotEmpty(t, rows)
			require.LessOrEqual(t, len(rows), inboxOrderBlock)
		}
		require.Equal(t, model, slices.Collect(o.all), "batch %d", batch)
		if len(model) > 0 {
			require.Same(t, model[0], o.oldest())
		} else {
			require.Nil(t, o.oldest())
		}
		starts := []*InboxPosition{nil}
		for range 20 {
			p := position()
			if len(model) > 0 && rng.IntN(2) == 0 {
				p = model[rng.IntN(len(model))].Position()
			}
			starts = append(starts, &p)
		}
		for _, p := range starts {
			var want []*memoryInboxRow
			for _, r := range slices.Backward(model) {
				if p == nil || comparePosition(r.Position(), *p) < 0 {
					want = append(want, r)
				}
			}
			var got []*memoryInboxRow
			for c := o.below(p); c.row() != nil; c.next() {
				got = append(got, c.row())
			}
			require.Equal(t, want, got, "batch %d, below %v", batch, p)
		}
	}
	t.Logf("%d rows in %d blocks at the end", o.n, len(o.blocks))
}
