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
// funcs before it releases the transaction's locks (guards, the per-object
// lock of OnCurrent), so the writes of transactions that took one lock in
// turn are applied in that order.
type memoryTable[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func newMemoryTable[T any]() memoryTable[T] { return memoryTable[T]{m: map[string]T{}} }

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
