package idempotencytest

import (
	"context"
	"sync"

	"github.com/seed-a84bb619/idempotency"
)

// Table is a fake of a table of the service's, rows by key, for handlers
// tested on the memory store: a [Table.Put] applies when the event's
// transaction commits, as the handler's SQL would, and of two Puts of one
// key that committed, the later call's row is kept, whichever
// transaction's AfterCommit funcs run last.
//
// That order is what an [idempotency.OnCurrent] handler's fake needs: a
// store releases OnCurrent's per-object lock at the commit, as PostgreSQL
// does, before the transaction's AfterCommit funcs run, so the funcs of
// two events of one object that a synchronous Handler applies at once may
// run in either order, and a fake that writes in them as they run may
// keep the older fetch's state. Put numbers each call as the handler makes
// it, under the lock, and applies a row only over one of an older call:
// called from an OnCurrent handler, which holds the object's lock, the
// calls are in the order of the fetches.
//
// [Table.Get] is for the test's assertions, once the deliveries have
// returned. On the memory store, a handler that reads the table finds
// there the writes of the events before it (it runs AfterCommit funcs
// before it releases a transaction's guards, and an inbox's workers wait
// for them before an object's next event) but in one case: an OnCurrent
// event that a synchronous Handler applies may take the object's lock
// before the AfterCommit funcs of the event that held it ran.
//
// The zero Table is empty and ready to use. It is safe for concurrent
// use.
type Table[T any] struct {
	mu    sync.Mutex
	rows  map[string]T
	puts  uint64            // Put's calls so far
	putBy map[string]uint64 // the call of Put whose row each key holds
}

// Put sets the row of key to row once tx commits, unless a row of a later
// call of Put for key, in a transaction that committed, is there already.
// A transaction that rolls back writes nothing.
func (t *Table[T]) Put(tx idempotency.Tx, key string, row T) {
	t.mu.Lock()
	t.puts++
	n := t.puts
	t.mu.Unlock()
	tx.AfterCommit(func(context.Context) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.rows == nil {
			t.rows, t.putBy = map[string]T{}, map[string]uint64{}
		}
		if n > t.putBy[key] {
			t.rows[key], t.putBy[key] = row, n
		}
	})
}

// Get returns the row of key, and false when there is none.
func (t *Table[T]) Get(key string) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	row, ok := t.rows[key]
	return row, ok
}
