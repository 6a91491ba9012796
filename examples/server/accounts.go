package main

import (
	"context"
	"sync"
	"time"

	"github.com/seed-a84bb619/idempotency"
)

// Account is the service's view of a customer account.
type Account struct {
	ID        string     `json:"id"`
	Credits   int64      `json:"credits"`
	Receipts  int        `json:"receipts"`
	PlanUntil *time.Time `json:"plan_until"`
}

// accounts is the business table. Grant writes inside the event's
// transaction, so the grant commits or rolls back with the claim.
type accounts interface {
	// Grant adds credits and one receipt to the account (creating it) and
	// moves plan_until to until if that is later.
	Grant(ctx context.Context, tx idempotency.Tx, id string, credits int64, until time.Time) error
	// Get returns the account, or false when it does not exist.
	Get(ctx context.Context, id string) (Account, bool, error)
}

// memoryAccounts keeps accounts in memory, applying each grant when its
// transaction commits.
type memoryAccounts struct{ memoryTable[Account] }

func newMemoryAccounts() *memoryAccounts { return &memoryAccounts{newMemoryTable[Account]()} }

func (a *memoryAccounts) Grant(_ context.Context, tx idempotency.Tx, id string, credits int64, until time.Time) error {
	a.update(tx, id, func(acct Account) Account {
		acct.ID = id
		acct.Credits += credits
		acct.Receipts++
		if !until.IsZero() && (acct.PlanUntil == nil || until.After(*acct.PlanUntil)) {
			u := until.UTC()
			acct.PlanUntil = &u
		}
		return acct
	})
	return nil
}

// memoryTable is a table of rows by id in memory, written when the
// transaction that writes them commits. The MemoryStore runs AfterCommit
// funcs before it releases a transaction's guards, so updates under one
// guard are applied in turn; but it releases OnCurrent's per-object lock
// at the commit, as PostgreSQL does, so the funcs of two transactions that
// took that lock in turn may run in either order in synchronous mode (an
// inbox's workers wait for them before the object's next event): replace
// orders them.
type memoryTable[T any] struct {
	mu     sync.Mutex
	m      map[string]T
	seq    uint64            // replace's calls so far
	stamps map[string]uint64 // the call of replace whose row each id holds
}

func newMemoryTable[T any]() memoryTable[T] {
	return memoryTable[T]{m: map[string]T{}, stamps: map[string]uint64{}}
}

// replace sets row id to row once tx commits, unless the row of a later
// call of replace for id, made in a transaction that committed, is there:
// called in a handler under OnCurrent's lock, the later call is that of
// the later fetch, whichever AfterCommit func runs last.
func (t *memoryTable[T]) replace(tx idempotency.Tx, id string, row T) {
	t.mu.Lock()
	t.seq++
	n := t.seq
	t.mu.Unlock()
	tx.AfterCommit(func(context.Context) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if n > t.stamps[id] {
			t.m[id], t.stamps[id] = row, n
		}
	})
}

// update sets row id to fn of its current value (the zero T when there is
// none) once tx commits.
func (t *memoryTable[T]) update(tx idempotency.Tx, id string, fn func(T) T) {
	tx.AfterCommit(func(context.Context) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.m[id] = fn(t.m[id])
	})
}

// Get returns row id, or false when there is none.
func (t *memoryTable[T]) Get(_ context.Context, id string) (T, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	row, ok := t.m[id]
	return row, ok, nil
}
