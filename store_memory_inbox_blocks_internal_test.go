package idempotency

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemoryInboxListAcrossBlocks stores enough inbox rows that each
// state's order holds several blocks, most received in the same few
// microseconds, and checks that List, a page at a time from After, Since
// and Until, answers what a filter over a sorted copy of every row
// answers, across the blocks' boundaries and while rows are forgotten.
func TestMemoryInboxListAcrossBlocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(38, 2))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewMemoryStore()
	for i := range 3 * inboxOrderBlock * 2 {
		st := []InboxState{InboxPending, InboxIgnored}[rng.IntN(2)]
		r := &inboxRow{InboxRecord: InboxRecord{EventID: fmt.Sprintf("evt_blk_%04d", rng.IntN(100000)), EventType: "invoice.paid",
			State: st, ReceivedAt: at.Add(time.Duration(rng.IntN(5)) * time.Microsecond)}}
		if st == InboxIgnored {
			r.FinishedAt = r.ReceivedAt
		}
		_, err := s.inboxEnqueue(ctx, r)
		require.NoError(t, err, "row %d", i)
	}
	sorted := func() []InboxRecord {
		var all []InboxRecord
		for _, r := range s.inbox {
			all = append(all, r.InboxRecord)
		}
		slices.SortFunc(all, func(a, b InboxRecord) int { return comparePosition(b.Position(), a.Position()) })
		return all
	}
	for round := range 4 {
		all := sorted()
		if round == 0 {
			for _, st := range []InboxState{InboxPending, InboxIgnored} {
				require.Greater(t, len(s.inboxRowsIn(KindEvent, st).blocks), 2, st)
			}
		}
		for range 20 {
			var f InboxFilter
			if rng.IntN(2) == 0 {
				f.States = []InboxState{[]InboxState{InboxPending, InboxIgnored}[rng.IntN(2)]}
			}
			if rng.IntN(3) == 0 {
				f.Since = at.Add(time.Duration(rng.IntN(5)) * time.Microsecond)
			}
			if rng.IntN(3) == 0 {
				f.Until = at.Add(time.Duration(1+rng.IntN(5)) * time.Microsecond)
			}
			var want []InboxRecord
			for _, r := range all {
				if f.matches(&r) {
					want = append(want, r)
				}
			}
			f.Limit = 1 + rng.IntN(300)
			if rng.IntN(4) > 0 {
				f.Limit += inboxOrderBlock // pages of about a block
			}
			var got []InboxRecord
			for {
				page, err := s.inboxList(ctx, f)
				require.NoError(t, err)
				got = append(got, page...)
				if len(page) < f.Limit {
					break
				}
				f.After = page[len(page)-1].Position()
			}
			positions := func(recs []InboxRecord) []InboxPosition {
				var out []InboxPosition
				for _, r := range recs {
					out = append(out, r.Position())
				}
				return out
			}
			require.Equal(t, positions(want), positions(got), "round %d, filter %+v", round, f)
			require.Equal(t, want, got, "round %d, filter %+v", round, f)
		}
		// Forget a third of the ignored rows: blocks shrink and go.
		for _, r := range all {
			if r.State == InboxIgnored && rng.IntN(3) == 0 {
				_, err := s.Forget(ctx, r.EventID)
				require.NoError(t, err)
			}
		}
	}
}

// inboxRowsIn is the order of the rows of kind in state; an empty one when
// there are none. s.mu is held.
func (s *MemoryStore) inboxRowsIn(kind InboxKind, state InboxState) *inboxOrder {
	if o := s.inboxByState[inboxSlot{kind, state}]; o != nil {
		return o
	}
	return &inboxOrder{}
}
