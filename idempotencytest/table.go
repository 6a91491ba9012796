package idempotencytest

import (
	"context"
	"sync"

	"github.com/seed-a84bb619/idempotency"
)

// Table is a fake of a table of the service's, rows by key, for handlers
// tested on the memory store: a [Table.Put] or a [Table.Delete] applies
// when the event's transaction commits, as the handler's SQL would, and
// of two writes to one key that committed, the later call's is kept,
// whichever transaction's AfterCommit funcs run last.
//
// That order is what an [idempotency.OnCurrent] handler's fake needs: a
// store releases OnCurrent's per-object lock at the commit, as PostgreSQL
// does, before the transaction's AfterCommit funcs run, so the funcs of
// two events of one object that a synchronous Handler applies at once may
// run in either order, and a fake that writes in them as they run may
// keep the older fetch's state. Put and Delete number each call as the
// handler makes it, under the lock, and apply a write only over one of an
// older call: called from an OnCurrent handler, or from an On handler of
// a kind an OnCurrent call covers (a .deleted handler), which both hold
// the object's lock, the calls are in the order of the events' writes.
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
	mu        sync.Mutex
	rows      map[string]T
	writes    uint64            // Put's and Delete's calls so far
	writtenBy map[string]uint64 // the call of Put or Delete whose write each key holds
}

// Put sets the row of key to row once tx commits, unless a later call of
// Put or Delete for key, in a transaction that committed, has written
// there already. A transaction that rolls back writes nothing.
func (t *Table[T]) Put(tx idempotency.Tx, key string, row T) {
	t.write(tx, key, func() { t.rows[key] = row })
}

// Delete removes the row of key once tx commits, unless a later call of
// Put or Delete for key, in a transaction that committed, has written
// there already: a .deleted handler's write. The deletion is remembered,
// as Put's writes are, so a Put called before it whose transaction's
// AfterCommit funcs run after it does not bring the row back, as a
// DELETE after an earlier fetch's UPDATE keeps the row deleted on
// PostgreSQL. A transaction that rolls back deletes nothing.
func (t *Table[T]) Delete(tx idempotency.Tx, key string) {
	t.write(tx, key, func() { delete(t.rows, key) })
}

// write numbers a call of Put or Delete as it is made, and applies it
// with t.mu held once tx commits, when no later call's write to key is
// there already.
func (t *Table[T]) write(tx idempotency.Tx, key string, apply func()) {
	t.mu.Lock()
	t.writes++
	n := t.writes
	t.mu.Unlock()
	tx.AfterCommit(func(context.Context) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.rows == nil {
			t.rows, t.writtenBy = map[string]T{}, map[string]uint64{}
		}
		if n > t.writtenBy[key] {
			apply()
			t.writtenBy[key] = n
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
