package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestNewTaskSafelyReturnsEachRefusal: NewTaskSafely returns, as an
// error, each refusal NewTask panics with (the same text), a duplicate
// name wrapping ErrDuplicateRegistration, and registers nothing then; on
// success it returns the task, as NewTask does.
func TestNewTaskSafelyReturnsEachRefusal(t *testing.T) {
	t.Parallel()
	registered := idempotency.NewHandlers()
	idempotency.NewTask(registered, "send-receipt", noopTask)
	built := idempotency.NewHandlers()
	_, err := idempotency.NewInbox(idempotency.NewMemoryStore(), built, idempotency.InboxConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, task string
		hs         *idempotency.Handlers
		fn         idempotency.TaskFunc[misuseArgs]
		want       string
		sentinel   error
	}{
		{"nil Handlers", "send-email", nil, noopTask, "nil *Handlers", nil},
		{"a bad name", "Send Email", idempotency.NewHandlers(), noopTask, "is not 1 to 100 of a-z", nil},
		{"nil func", "send-email", idempotency.NewHandlers(), nil, "nil func", nil},
		{"a name taken", "send-receipt", registered, noopTask, "already registered", idempotency.ErrDuplicateRegistration},
		{"after NewInbox", "send-email", built, noopTask, "registered after NewInbox", nil},
	} {
		task, err := idempotency.NewTaskSafely(tc.hs, tc.task, tc.fn)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.Nil(t, task, tc.name)
		if tc.sentinel != nil {
			require.ErrorIs(t, err, tc.sentinel, tc.name)
		}
		require.PanicsWithError(t, err.Error(), func() { idempotency.NewTask(tc.hs, tc.task, tc.fn) }, tc.name)
	}
	// Nothing was registered: the names are free.
	_, err = idempotency.NewTaskSafely(idempotency.NewHandlers(), "send-email", noopTask)
	require.NoError(t, err)
	task, err := idempotency.NewTaskSafely(registered, "send-email", noopTask)
	require.NoError(t, err)
	require.Equal(t, "send-email", task.Name())
	require.Equal(t, "task:send-email:in_1", task.ID("in_1"))
}

// TestOnCurrentSafelyReturnsEachRefusal: OnCurrentSafely returns, as an
// error, each refusal OnCurrent panics with (the same text), wrapping
// ErrDuplicateRegistration or ErrInvalidKey where OnCurrent's doc says
// so, and registers none of the call's types then.
func TestOnCurrentSafelyReturnsEachRefusal(t *testing.T) {
	t.Parallel()
	sub := []string{"customer.subscription.updated"}
	// A type of a kind whose scope no store keeps: "current:" and the
	// kind, 1025 bytes.
	long := []string{sub[0], strings.Repeat("x", 1024-len("current:")+1) + ".updated"}
	withHandler := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "customer.subscription.deleted", handleNothing)
		return hs
	}
	withCall := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs, []string{"customer.subscription.created"}, fetchNothing, handleNothing)
		return hs
	}
	for _, tc := range []struct {
		name     string
		hs       *idempotency.Handlers
		types    []string
		fetch    idempotency.FetchFunc[*stripe.Subscription]
		fn       idempotency.EventFunc[*stripe.Subscription]
		want     string
		sentinel error
	}{
		{"nil Handlers", nil, sub, fetchNothing, handleNothing, "nil *Handlers", nil},
		{"no types", idempotency.NewHandlers(), nil, fetchNothing, handleNothing, "no event types", nil},
		{"nil fetch", idempotency.NewHandlers(), sub, nil, handleNothing, "nil fetch", nil},
		{"nil func", idempotency.NewHandlers(), sub, fetchNothing, nil, "nil fetch or handler func", nil},
		{"an empty type", idempotency.NewHandlers(), []string{"customer.updated", ""}, fetchNothing, handleNothing, "empty event type", nil},
		{"a wildcard", idempotency.NewHandlers(), []string{"customer.subscription.*"}, fetchNothing, handleNothing, "is a wildcard", nil},
		{"a type given twice", idempotency.NewHandlers(), []string{sub[0], sub[0]}, fetchNothing, handleNothing, "is given twice", idempotency.ErrDuplicateRegistration},
		{"a type with a handler", withHandler(), []string{sub[0], "customer.subscription.deleted"}, fetchNothing, handleNothing, "has a handler", idempotency.ErrDuplicateRegistration},
		{"a kind of another call", withCall(), sub, fetchNothing, handleNothing, "have an OnCurrent call already", idempotency.ErrDuplicateRegistration},
		{"a scope too long", idempotency.NewHandlers(), long, fetchNothing, handleNothing, "the scope of kind", idempotency.ErrInvalidKey},
	} {
		var before []string
		if tc.hs != nil {
			before = tc.hs.EventTypes()
		}
		err := idempotency.OnCurrentSafely(tc.hs, tc.types, tc.fetch, tc.fn)
		require.ErrorContains(t, err, tc.want, tc.name)
		if tc.sentinel != nil {
			require.ErrorIs(t, err, tc.sentinel, tc.name)
		}
		if tc.hs != nil {
			require.Equal(t, before, tc.hs.EventTypes(), "%s: nothing registered", tc.name)
		}
		require.PanicsWithError(t, err.Error(), func() { idempotency.OnCurrent(tc.hs, tc.types, tc.fetch, tc.fn) }, tc.name)
	}
	hs := idempotency.NewHandlers()
	require.NoError(t, idempotency.OnCurrentSafely(hs, sub, fetchNothing, handleNothing))
	require.Equal(t, sub, hs.EventTypes())
}
