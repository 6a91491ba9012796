package idempotency

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"time"
)

// inboxOrder holds inbox rows of one kind and state in ascending List
// order reversed: by ReceivedAt, then EventID. Stats reads its length and
// its first row (the oldest), List walks it down from a position and stops
// at its page's end: neither looks at the rows of the other states. The
// rows are kept in sorted blocks of at most inboxOrderBlock, so that
// adding or removing one moves a block's rows, not every row.
//
// An inboxOrder whose by is set orders its rows by the positions by gives
// them instead, in the same blocks: Prune's finished tasks whose arguments
// are still to clear, and the finished rows of a kind and state, by when
// they finished.
type inboxOrder struct {
	blocks [][]*memoryInboxRow // none empty, each in order, one after the other
	n      int                 // rows in all blocks
	// by, when not nil, is a row's position in o; it must not change
	// while the row is in o. When nil, it is the row's Position: List's
	// order.
	by func(*memoryInboxRow) InboxPosition
	// spare is the last block, emptied: the first row added next takes
	// it, as a row leased and given back, or applied, empties and fills
	// the processing rows' order at each lease.
	spare []*memoryInboxRow
}

// inboxOrderBlock is the most rows in one block of an inboxOrder.
const inboxOrderBlock = 256

// comparePosition orders positions as inboxOrder does, the reverse of
// List's order.
func comparePosition(a, b InboxPosition) int {
	return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), strings.Compare(a.EventID, b.EventID))
}

// position is r's position in o.
func (o *inboxOrder) position(r *memoryInboxRow) InboxPosition {
	if o.by != nil {
		return o.by(r)
	}
	return r.Position()
}

// find is where p is or would go: a block and an index in it (the block's
// length when p comes after its last row).
func (o *inboxOrder) find(p InboxPosition) (block, i int) {
	b, _ := slices.BinarySearchFunc(o.blocks, p, func(rows []*memoryInboxRow, p InboxPosition) int {
		return comparePosition(o.position(rows[len(rows)-1]), p)
	})
	if b == len(o.blocks) { // after every row: at the end of the last block
		if b == 0 {
			return 0, 0
		}
		return b - 1, len(o.blocks[b-1])
	}
	i, _ = slices.BinarySearchFunc(o.blocks[b], p, func(r *memoryInboxRow, p InboxPosition) int {
		return comparePosition(o.position(r), p)
	})
	return b, i
}

// insert adds r, whose position no row of o has.
func (o *inboxOrder) insert(r *memoryInboxRow) {
	o.n++
	if len(o.blocks) == 0 {
		o.blocks, o.spare = append(o.blocks, append(o.spare, r)), nil
		return
	}
	b, i := o.find(o.position(r))
	rows := slices.Insert(o.blocks[b], i, r)
	o.blocks[b] = rows
	if len(rows) > inboxOrderBlock {
		half := len(rows) / 2
		upper := slices.Clone(rows[half:])
		clear(rows[half:]) // the upper half is not referenced twice
		o.blocks[b] = rows[:half]
		o.blocks = slices.Insert(o.blocks, b+1, upper)
	}
}

// remove takes r out of o; it does nothing when r is not there.
func (o *inboxOrder) remove(r *memoryInboxRow) {
	b, i := o.find(o.position(r))
	if b == len(o.blocks) || i == len(o.blocks[b]) || o.blocks[b][i] != r {
		return
	}
	o.n--
	o.blocks[b] = slices.Delete(o.blocks[b], i, i+1)
	if len(o.blocks[b]) == 0 {
		if len(o.blocks) == 1 {
			o.spare = o.blocks[b]
		}
		o.blocks = slices.Delete(o.blocks, b, b+1)
	}
}

// oldest is o's first row, received first; nil when o is empty.
func (o *inboxOrder) oldest() *memoryInboxRow {
	if len(o.blocks) == 0 {
		return nil
	}
	return o.blocks[0][0]
}

// newest is o's last row; nil when o is empty.
func (o *inboxOrder) newest() *memoryInboxRow {
	if len(o.blocks) == 0 {
		return nil
	}
	last := o.blocks[len(o.blocks)-1]
	return last[len(last)-1]
}

// all yields o's rows in order.
func (o *inboxOrder) all(yield func(*memoryInboxRow) bool) {
	for _, rows := range o.blocks {
		for _, r := range rows {
			if !yield(r) {
				return
			}
		}
	}
}

// appendBefore appends to rows o's rows in order, from its first, up to
// the first whose position is at cutoff or later, while rows holds fewer
// than n; a nil o holds none.
func (o *inboxOrder) appendBefore(rows []*memoryInboxRow, n int, cutoff time.Time) []*memoryInboxRow {
	if o == nil {
		return rows
	}
	for r := range o.all {
		if len(rows) >= n || !o.position(r).ReceivedAt.Before(cutoff) {
			break
		}
		rows = append(rows, r)
	}
	return rows
}

// received yields o's rows received within since and until, as
// [inRange] bounds them (a zero time leaves that side open), newest first:
// of the rows outside them, it reads the one before since alone.
func (o *inboxOrder) received(since, until time.Time) iter.Seq[*memoryInboxRow] {
	return func(yield func(*memoryInboxRow) bool) {
		var from *InboxPosition
		if !until.IsZero() {
			from = &InboxPosition{ReceivedAt: until} // before every row received at until
		}
		for c := o.below(from); c.row() != nil; c.next() {
			if r := c.row(); !inRange(r.ReceivedAt, since, until) || !yield(r) {
				return
			}
		}
	}
}

// below is a cursor on o's rows before p, walking down (List's order)
// from the last of them; from o's last row when p is nil.
func (o *inboxOrder) below(p *InboxPosition) inboxCursor {
	c := inboxCursor{o: o, block: len(o.blocks) - 1}
	if c.block >= 0 {
		c.i = len(o.blocks[c.block])
	}
	if p != nil {
		c.block, c.i = o.find(*p)
	}
	c.next()
	return c
}

// inboxCursor is a place in an inboxOrder that moves down. The order must
// not change while it is used.
type inboxCursor struct {
	o        *inboxOrder
	block, i int // block < 0 once past the first row
}

// row is the row at c, nil once c is past the first row.
func (c *inboxCursor) row() *memoryInboxRow {
	if c.block < 0 || c.block >= len(c.o.blocks) {
		return nil
	}
	return c.o.blocks[c.block][c.i]
}

// next moves c to the row before.
func (c *inboxCursor) next() {
	c.i--
	for c.i < 0 && c.block >= 0 {
		c.block--
		if c.block >= 0 {
			c.i = len(c.o.blocks[c.block]) - 1
		}
	}
}
