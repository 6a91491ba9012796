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
type memoryAccounts struct {
	mu sync.Mutex
	m  map[string]Account
}

func newMemoryAccounts() *memoryAccounts { return &memoryAccounts{m: map[string]Account{}} }

func (a *memoryAccounts) Grant(_ context.Context, tx idempotency.Tx, id string, credits int64, until time.Time) error {
	tx.AfterCommit(func(context.Context) {
		a.mu.Lock()
		defer a.mu.Unlock()
		acct := a.m[id]
		acct.ID = id
		acct.Credits += credits
		acct.Receipts++
		if !until.IsZero() && (acct.PlanUntil == nil || until.After(*acct.PlanUntil)) {
			u := until.UTC()
			acct.PlanUntil = &u
		}
		a.m[id] = acct
	})
	return nil
}

func (a *memoryAccounts) Get(_ context.Context, id string) (Account, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct, ok := a.m[id]
	return acct, ok, nil
}
