package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

type grant struct{ account string }

// purchaseRoute registers one action, "grant-invoice", owned by the two
// invoice events, and three handlers: the owners and an intruder.
func purchaseRoute(t *testing.T) (*idempotency.Handlers, *counters, *idempotency.Action[grant]) {
	hs := idempotency.NewHandlers()
	c := &counters{m: map[string]int{}}
	credit := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name:   "grant-invoice",
		Key:    "invoice id",
		Owners: []string{"invoice.paid", "invoice.payment_succeeded"},
	}, func(ctx context.Context, tx idempotency.Tx, _ string, g grant) error {
		return c.add(ctx, tx, g.account, 100)
	})
	viaInvoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := credit.Do(ctx, tx, ev.Object.ID, grant{account: "acct_42"})
		return err
	}
	idempotency.On(hs, "invoice.paid", viaInvoice)
	idempotency.On(hs, "invoice.payment_succeeded", viaInvoice)
	idempotency.On(hs, "checkout.session.completed", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.CheckoutSession]) error {
		_, err := credit.Do(ctx, tx, ev.Object.ID, grant{account: "acct_42"})
		return err
	})
	return hs, c, credit
}

func TestActionRunsOncePerKeyAcrossEventTypes(t *testing.T) {
	t.Parallel()
	hs, c, _ := purchaseRoute(t)
	store := idempotency.NewMemoryStore()
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, name := range []string{"invoice.paid", "invoice.payment_succeeded"} {
		a := idempotencytest.Deliver(h, fixture(t, name), testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, name)
	}
	require.Equal(t, 100, c.get(t, "acct_42"))
	g, ok, err := store.LookupGuard(t.Context(), "action:grant-invoice", "in_1Pgc6tB7WZ01zgkWu9fdqL6I")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "evt_1S2kq5B7WZ01zgkWbX2cNw7Y", g.EventID, "invoice.paid came first and granted it")
}

func TestActionNotOwner(t *testing.T) {
	t.Parallel()
	hs, c, credit := purchaseRoute(t)
	store := idempotency.NewMemoryStore()
	var res idempotency.Result
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, fixture(t, "checkout.session.completed"), testSecret)
	require.Equal(t, 500, a.Status)
	require.ErrorIs(t, res.Err, idempotency.ErrNotOwner)
	require.ErrorContains(t, res.Err, `"grant-invoice"`)
	require.ErrorContains(t, res.Err, "checkout.session.completed")
	require.Zero(t, c.get(t, "acct_42"))

	// The same check straight from a unit test of the handler's transaction.
	_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_u", EventType: "charge.refunded"}, func(ctx context.Context, tx idempotency.Tx) error {
		ran, err := credit.Do(ctx, tx, "in_1", grant{})
		require.False(t, ran)
		return err
	})
	require.ErrorIs(t, err, idempotency.ErrNotOwner)
}

func TestActionFailureRollsBackItsGuard(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fail := true
	act := idempotency.NewAction(hs, idempotency.ActionSpec{Name: "email", Key: "invoice id"},
		func(context.Context, idempotency.Tx, string, struct{}) error {
			if fail {
				return errors.New("smtp down")
			}
			return nil
		})
	store := idempotency.NewMemoryStore()
	run := func(id string) (bool, error) {
		var ran bool
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: id, EventType: "invoice.paid"}, func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			ran, err = act.Do(ctx, tx, "in_1", struct{}{})
			return err
		})
		return ran, err
	}
	_, err := run("evt_1")
	require.ErrorContains(t, err, "smtp down")
	fail = false
	ran, err := run("evt_1")
	require.NoError(t, err)
	require.True(t, ran, "the failed run rolled its guard back")
	ran, err = run("evt_2")
	require.NoError(t, err)
	require.False(t, ran, "once per key")
}

func TestOwnershipTable(t *testing.T) {
	t.Parallel()
	hs, _, _ := purchaseRoute(t)
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "welcome-email", Key: "customer id", Owners: []string{"customer.created"}},
		func(context.Context, idempotency.Tx, string, string) error { return nil })
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "audit", Key: "event id"},
		func(context.Context, idempotency.Tx, string, string) error { return nil })
	var b strings.Builder
	require.NoError(t, hs.WriteOwnershipTable(&b))
	require.Equal(t, strings.Join([]string{
		"ACTION         KEY          OWNERS",
		"grant-invoice  invoice id   invoice.paid, invoice.payment_succeeded",
		"welcome-email  customer id  customer.created (no handler)",
		"audit          event id     any event type",
		"",
	}, "\n"), b.String())
	require.Equal(t, []idempotency.ActionInfo{
		{Name: "grant-invoice", Key: "invoice id", Owners: []string{"invoice.paid", "invoice.payment_succeeded"}},
		{Name: "welcome-email", Key: "customer id", Owners: []string{"customer.created"}},
		{Name: "audit", Key: "event id"},
	}, hs.Actions())
}

func TestActionRegistrationErrors(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fn := func(context.Context, idempotency.Tx, string, int) error { return nil }
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "a", Key: "k"}, fn)
	_, err := idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: "a", Key: "k"}, fn)
	require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
	require.Panics(t, func() { idempotency.NewAction(hs, idempotency.ActionSpec{Name: "a", Key: "k"}, fn) })
	for _, spec := range []idempotency.ActionSpec{{Key: "k"}, {Name: "b"}, {Name: "c", Key: "k", Owners: []string{""}}} {
		_, err := idempotency.NewActionSafely(hs, spec, fn)
		require.Error(t, err, "%+v", spec)
	}
	_, err = idempotency.NewActionSafely[int](hs, idempotency.ActionSpec{Name: "d", Key: "k"}, nil)
	require.Error(t, err)

	// A name is part of a guard scope, which a store indexes: one it
	// cannot keep is refused here, not by every event at run time.
	for _, name := range []string{"a\x00b", "bad\xff", strings.Repeat("n", 1018)} {
		_, err := idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: name, Key: "k"}, fn)
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "%q", name)
	}
	_, err = idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: strings.Repeat("n", 1017), Key: "k"}, fn)
	require.NoError(t, err, "the longest name whose scope a store keeps")
}

// claimRecorder is a MemoryStore that keeps the claims it is given.
type claimRecorder struct {
	*idempotency.MemoryStore
	mu     sync.Mutex
	claims []idempotency.Claim
}

func (r *claimRecorder) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	r.mu.Lock()
	r.claims = append(r.claims, c)
	r.mu.Unlock()
	return r.MemoryStore.Run(ctx, c, apply)
}

// TestKeyIsObjectIDNamesGuardsInClaim: the handler names the guards of the
// actions declared KeyIsObjectID in the claim of each owner's events, in
// declaration order, keyed by data.object.id, and the results are those of
// the same route without the hint.
func TestKeyIsObjectIDNamesGuardsInClaim(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	c := &counters{m: map[string]int{}}
	grantInvoice := idempotency.NewAction(hs, idempotency.ActionSpec{
		Name: "grant-invoice", Key: "invoice id", Owners: []string{"invoice.paid"}, KeyIsObjectID: true,
	}, func(ctx context.Context, tx idempotency.Tx, _ string, g grant) error {
		return c.add(ctx, tx, g.account, 100)
	})
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "audit", Key: "object id", KeyIsObjectID: true},
		func(context.Context, idempotency.Tx, string, string) error { return nil })
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "receipt", Key: "invoice id", Owners: []string{"invoice.paid"}},
		func(context.Context, idempotency.Tx, string, string) error { return nil })
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := grantInvoice.Do(ctx, tx, ev.Object.ID, grant{account: ev.Object.Metadata["account_id"]})
		return err
	})
	idempotency.On(hs, "charge.refunded", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error { return nil })
	store := &claimRecorder{MemoryStore: idempotency.NewMemoryStore()}
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true})
	require.NoError(t, err)

	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_k1", "in_k", "acct_k"), testSecret).Outcome)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_k2", "in_k", "acct_k"), testSecret).Outcome)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, eventPayload(t, "charge.refunded", "evt_k3", nil), testSecret).Outcome)
	require.Equal(t, idempotency.OutcomeIgnored, idempotencytest.Deliver(h, eventPayload(t, "payment_intent.succeeded", "evt_k4", nil), testSecret).Outcome)
	require.Equal(t, 100, c.get(t, "acct_k"), "two events for one invoice credit once")

	require.Len(t, store.claims, 4)
	require.Equal(t, []idempotency.GuardKey{{Scope: "action:grant-invoice", Key: "in_k"}, {Scope: "action:audit", Key: "in_k"}}, store.claims[0].Guards)
	require.Equal(t, store.claims[0].Guards, store.claims[1].Guards)
	var charge struct {
		Data struct{ Object struct{ ID string } }
	}
	require.NoError(t, json.Unmarshal(fixture(t, "charge.refunded"), &charge))
	require.Equal(t, []idempotency.GuardKey{{Scope: "action:audit", Key: charge.Data.Object.ID}}, store.claims[2].Guards, "an action with no owners is owned by every handled type")
	require.Empty(t, store.claims[3].Guards, "an event without a handler runs no action")

	require.Equal(t, []idempotency.ActionInfo{
		{Name: "grant-invoice", Key: "invoice id", Owners: []string{"invoice.paid"}, KeyIsObjectID: true},
		{Name: "audit", Key: "object id", KeyIsObjectID: true},
		{Name: "receipt", Key: "invoice id", Owners: []string{"invoice.paid"}},
	}, hs.Actions())
}

// TestActionOwnersNoEventTypeCanBe: an owner no delivered event's type can
// equal (a wildcard, white space, an env file's newline, a NUL byte, empty)
// is refused when the action is declared, naming ActionSpec.Owners[i], as
// On refuses such a type. (It was taken, and every call of the action
// failed with ErrNotOwner at run time.)
func TestActionOwnersNoEventTypeCanBe(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fn := func(context.Context, idempotency.Tx, string, int) error { return nil }
	for i, owner := range []string{"invoice.*", "*", "invoice.paid ", "invoice.paid\n", "invoice paid", "invoice.paid\x00", ""} {
		_, err := idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: fmt.Sprint("a", i), Key: "k", Owners: []string{"invoice.paid", owner}}, fn)
		require.ErrorContains(t, err, "ActionSpec.Owners[1]", "%q", owner)
		require.Panics(t, func() {
			idempotency.NewAction(hs, idempotency.ActionSpec{Name: fmt.Sprint("b", i), Key: "k", Owners: []string{owner}}, fn)
		}, "%q", owner)
	}
	require.Empty(t, hs.Actions(), "nothing declared")
	_, err := idempotency.NewActionSafely(hs, idempotency.ActionSpec{Name: "ok", Key: "k", Owners: []string{"invoice.paid", "invoice.payment_succeeded"}}, fn)
	require.NoError(t, err)
}
