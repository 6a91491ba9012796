package idempotency

import (
	"context"
	"fmt"
	"time"
)

// Order is where an event stands among the events applied for one key,
// as [CheckOrder] reports it.
type Order int

// The answers of CheckOrder.
const (
	// OrderNewer: no event applied for the key was created later; this one
	// is now the newest. Apply its payload.
	OrderNewer Order = iota + 1
	// OrderOlder: an event created in a later second was applied. Its
	// payload is stale: skip it.
	OrderOlder
	// OrderTie: the newest event applied was created in the same second.
	// Stripe's created has one-second resolution, and events of one second
	// arrive in any order, so neither payload can be trusted to be the
	// later state: fetch the object and apply what the API returns.
	OrderTie
)

// String is "newer", "older" or "tie" (Order(n) for another value).
func (o Order) String() string {
	switch o {
	case OrderNewer:
		return "newer"
	case OrderOlder:
		return "older"
	case OrderTie:
		return "tie"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// CheckOrder is the order guard for handlers that apply payloads rather
// than refetching ([OnCurrent]): it records, per (scope, key) and in tx,
// the newest event applied, by created (and that events of its second
// tied, once two did), and tells whether tx's event, created at created
// (Event.Created), is newer, older, or ties in the same second with the
// newest applied: with any other event of that second, also when one of
// them is applied again after [PgxStore.Forget].
//
// A tie cannot be decided from the payload: two updates of a subscription
// in one second carry the same created, and nothing in either says which
// state came last (the event ids are not ordered in time). Comparing
// created strictly drops the later of the two, and >= lets a stale
// redelivery overwrite a newer state. On a tie, fetch the object.
//
// Like a guard, the record commits or rolls back with tx, and a check of
// the same key in a transaction in flight waits for it to end. The scope
// and key follow Guard's rules ([ErrInvalidKey]); created must be a time
// between the years 1 and 9999, or the zero time ([ErrInvalidKey]). The
// key is one for the store, whatever connected account the event came
// from, as a guard's is: put the account in a key of an id that repeats
// across accounts (a capability's card_payments), or one account's
// newer event makes another account's object of that id read as older.
func CheckOrder(ctx context.Context, tx Tx, scope, key string, created time.Time) (Order, error) {
	if err := checkGuardKey(scope, key); err != nil {
		return 0, err
	}
	if err := checkStoredTime("CheckOrder's created", created); err != nil {
		return 0, err
	}
	ot, ok := tx.(objectTx)
	if !ok {
		return 0, errorf("%w (got %T)", ErrNeedsStoreTx, tx)
	}
	return ot.order(ctx, scope, key, created.Truncate(time.Second))
}

// orderRecord is the newest event applied for an order key: its created
// second and its id, or no id when events of that second tied.
type orderRecord struct {
	created time.Time
	eventID string
}

// compare places the event ev against the newest applied, prev; found
// reports whether there is one. It returns the answer, the record to
// keep, and whether that is not prev. When events of one second
// tie, the record keeps the second without an id, so that each of them,
// applied again after Forget, ties again, whichever id sorts first: kept
// as the newest, the one whose id sorts last would be answered
// OrderNewer over the others applied since.
func (ev orderRecord) compare(prev orderRecord, found bool) (answer Order, keep orderRecord, changed bool) {
	switch {
	case !found, ev.created.After(prev.created):
		return OrderNewer, ev, true
	case ev.created.Before(prev.created):
		return OrderOlder, prev, false
	case ev.eventID == prev.eventID:
		return OrderNewer, prev, false // this event again: a retry of its transaction, or Forget's
	case prev.eventID == "":
		return OrderTie, prev, false // tied before
	}
	return OrderTie, orderRecord{created: prev.created}, true
}
