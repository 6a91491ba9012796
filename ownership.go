package idempotency

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// An Action is a side effect declared once, with a name and a natural key,
// that runs at most once per key whichever event causes it. Stripe reports
// one purchase as invoice.paid, invoice.payment_succeeded and more, each
// with its own event id: every handler that may grant the purchase calls
// the same Action with the invoice id, and the first transaction to commit
// grants it.
//
// The once-per-key guarantee is a [Tx.Guard] in scope "action:" + name,
// claimed in the calling transaction: it commits or rolls back with the
// action's writes. Keep the "action:" prefix out of your own guard scopes.
//
// Make one with [NewAction]: the zero Action is not usable, its Do fails
// and its Name is "", as a nil one's.
type Action[A any] struct {
	name   string
	owners []string
	fn     ActionFunc[A]
}

// ActionFunc performs an action's side effect for one key inside tx. arg
// carries what the side effect needs beyond the key (an account id, an
// amount).
type ActionFunc[A any] func(ctx context.Context, tx Tx, key string, arg A) error

// ActionSpec declares an action.
type ActionSpec struct {
	// Name identifies the action; it is part of the guard scope, so renaming
	// an action forgets which keys it ran for. Required, unique per
	// registry; without white space at its ends or a control character
	// (" grant-plan" would be another action, with keys of its own);
	// valid UTF-8 without NUL bytes, at most 1017 bytes (the scope
	// "action:" + Name is indexed), or [ErrInvalidKey].
	Name string
	// Key says what the natural key is ("invoice id"), for the ownership
	// table. Required: not empty nor white space only.
	Key string
	// Owners are the event types allowed to call the action. A call from any
	// other event type fails with [ErrNotOwner]. Empty means any event type.
	// Each is listed once. NewAction copies the slice.
	Owners []string
	// KeyIsObjectID says that the owners call Do with the id of their
	// event's object (data.object.id), as invoice.paid handlers do with the
	// invoice id. The action's guard is then claimed together with the
	// event (in the claim's round trip on PostgreSQL: one fewer per
	// delivery) instead of when Do runs. It is a hint, never a change of
	// results: Do with another key guards that key as usual, and a key
	// claimed early that Do never asks for is released before the commit,
	// or before a savepoint the handler opens (PgxTx's Begin, or a
	// SAVEPOINT statement through its Exec), so that Do in it claims the
	// key in it, undone by a rollback to it as without the hint.
	// Until then it is held as a guard is, though: on PostgreSQL another
	// event's transaction that claims the same id waits for this one to
	// end. Under Connect, where some ids repeat in every connected account
	// (a capability's card_payments) and the key then holds the account
	// (ev.Account + ":" + id, see [Tx.Guard]), leave it false: the early
	// claim of the bare id would make each account's event of that id
	// wait for another account's transaction.
	KeyIsObjectID bool
}

// ActionInfo is one row of the ownership table.
type ActionInfo struct {
	Name          string
	Key           string
	Owners        []string // empty: any event type
	KeyIsObjectID bool
}

// NewAction declares an action in hs and returns it. It panics on a
// programming error: an empty name, a key empty or of white space only, a
// name with white space at its ends (or of white space only) or a control
// character, a name no store can keep in a
// guard scope ([ErrInvalidKey]; see ActionSpec.Name), an owner that no
// event's type can be (empty, with white space, or a wildcard such as
// "invoice.*", as [On] refuses) or one listed twice, a nil fn, or a name
// already taken ([ErrDuplicateRegistration]).
// [NewActionSafely] returns the error instead.
func NewAction[A any](hs *Handlers, spec ActionSpec, fn ActionFunc[A]) *Action[A] {
	a, err := NewActionSafely(hs, spec, fn)
	if err != nil {
		panic(err)
	}
	return a
}

// NewActionSafely is [NewAction] returning the error instead of panicking;
// the error wraps [ErrDuplicateRegistration] when the name is taken, and
// [ErrInvalidKey] when no store can keep it in a guard scope.
func NewActionSafely[A any](hs *Handlers, spec ActionSpec, fn ActionFunc[A]) (*Action[A], error) {
	switch {
	case hs == nil:
		return nil, errorf("NewAction: nil *Handlers")
	case spec.Name == "":
		return nil, errorf("NewAction: ActionSpec.Name is empty")
	case strings.TrimSpace(spec.Key) == "":
		return nil, errorf("NewAction %q: ActionSpec.Key is empty (say what the natural key is, e.g. \"invoice id\")", spec.Name)
	case fn == nil:
		return nil, errorf("NewAction %q: nil func", spec.Name)
	}
	for i, owner := range spec.Owners {
		if owner == "" {
			return nil, errorf("NewAction %q: ActionSpec.Owners[%d] is empty", spec.Name, i)
		}
		// An owner no event's type equals: every call of the action
		// would fail with ErrNotOwner, at run time.
		if err := checkEventType(owner); err != nil {
			return nil, errorf("NewAction %q: ActionSpec.Owners[%d]: %w", spec.Name, i, err)
		}
		// The ownership table would list it twice, as if two owners.
		if first := slices.Index(spec.Owners, owner); first < i {
			return nil, errorf("NewAction %q: ActionSpec.Owners[%d] %q is Owners[%d] again; list each owner once", spec.Name, i, owner, first)
		}
	}
	// The name is part of a guard scope, which a store indexes: one no
	// store can keep would fail every event of the owners at run time.
	if err := checkKey("its guard scope", actionScope(spec.Name)); err != nil {
		return nil, errorf("NewAction %q: %w", spec.Name, err)
	}
	if paddedName(spec.Name) {
		// "grant-plan\n" read from a file would be another action than
		// "grant-plan", with keys of its own: each would run once more.
		return nil, errorf("NewAction %q: ActionSpec.Name has leading or trailing white space or a control character: it names the action's guard scope, and would be another action than the one meant, with keys of its own", spec.Name)
	}
	for _, a := range hs.actions {
		if a.Name == spec.Name {
			return nil, errorf("NewAction %q: %w: an earlier NewAction took the name", spec.Name, ErrDuplicateRegistration)
		}
	}
	owners := slices.Clone(spec.Owners)
	hs.actions = append(hs.actions, ActionInfo{Name: spec.Name, Key: spec.Key, Owners: owners, KeyIsObjectID: spec.KeyIsObjectID})
	return &Action[A]{name: spec.Name, owners: owners, fn: fn}, nil
}

// Name returns the action's name; "" on an Action that [NewAction] did
// not return (a zero or nil Action).
func (a *Action[A]) Name() string {
	if a == nil {
		return ""
	}
	return a.name
}

// Do runs the action for key inside tx unless it has already run for key,
// in this transaction or a committed one. It reports whether it ran. It
// fails with [ErrNotOwner] when tx's event type is not one of the action's
// owners, and passes on the action func's error unchanged, so the handler
// can return it and roll everything back. On an Action that [NewAction]
// did not return (a zero or nil Action) it fails, claiming no key.
func (a *Action[A]) Do(ctx context.Context, tx Tx, key string, arg A) (ran bool, err error) {
	if a == nil || a.fn == nil {
		// It would claim the key in the scope "action:", then call a nil
		// func.
		return false, errorf("Action.Do: an Action not made by NewAction, which names and registers it")
	}
	if len(a.owners) > 0 && !slices.Contains(a.owners, tx.EventType()) {
		return false, errorf("%w: action %q is owned by %s, called from an event of type %s",
			ErrNotOwner, a.name, strings.Join(a.owners, ", "), tx.EventType())
	}
	first, err := tx.Guard(ctx, actionScope(a.name), key)
	if err != nil || !first {
		return false, err
	}
	return true, a.fn(ctx, tx, key, arg)
}

// actionScope is the guard scope of the action name.
func actionScope(name string) string { return "action:" + name }

// earlyGuardScopes maps each event type with a handler to the guard scopes
// of the actions it owns that are keyed by the object id.
func (hs *Handlers) earlyGuardScopes() map[string][]string {
	early := make(map[string][]string)
	for _, a := range hs.actions {
		if !a.KeyIsObjectID {
			continue
		}
		for eventType := range hs.byType {
			if len(a.Owners) == 0 || slices.Contains(a.Owners, eventType) {
				early[eventType] = append(early[eventType], actionScope(a.Name))
			}
		}
	}
	return early
}

// Actions returns the ownership table: every declared action in declaration
// order; none for a nil Handlers.
func (hs *Handlers) Actions() []ActionInfo {
	if hs == nil {
		return []ActionInfo{}
	}
	out := make([]ActionInfo, len(hs.actions))
	for i, a := range hs.actions {
		a.Owners = slices.Clone(a.Owners)
		out[i] = a
	}
	return out
}

// WriteOwnershipTable writes the ownership table as aligned text: action,
// key, owners. An owner with no registered handler is marked, since the
// action can never run from it. A nil Handlers has the header alone.
func (hs *Handlers) WriteOwnershipTable(w io.Writer) error {
	var registered map[string]registration
	if hs != nil {
		registered = hs.byType
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tKEY\tOWNERS")
	for _, a := range hs.Actions() {
		owners := "any event type"
		if len(a.Owners) > 0 {
			marked := make([]string, len(a.Owners))
			for i, o := range a.Owners {
				marked[i] = o
				if _, ok := registered[o]; !ok {
					marked[i] += " (no handler)"
				}
			}
			owners = strings.Join(marked, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, a.Key, owners)
	}
	return tw.Flush()
}
