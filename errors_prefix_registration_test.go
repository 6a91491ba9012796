package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestRegistrationRefusalsShareOnePrefix: every refusal of a registration
// function starts with that function's name and, for NewAction and
// NewTask once the name is known, the name being registered:
// `NewAction "grant": `, `NewTask "send-receipt": `, `On: `,
// `OnCurrent: `; a second registration of one name or type too, wrapping
// ErrDuplicateRegistration. A padded action name read
// `NewAction: ActionSpec.Name "grant "`, NewTask's refusals
// `NewTask: nil func for "send-receipt"`, a second On of a type started
// with the sentinel's text, and OnCurrent's refusal of a type On refuses
// read `On: ` as if On had refused it.
func TestRegistrationRefusalsShareOnePrefix(t *testing.T) {
	t.Parallel()
	action := func(context.Context, idempotency.Tx, string, int) error { return nil }
	task := func(context.Context, idempotency.TaskRun[int]) error { return nil }
	handler := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil }
	fetch := func(context.Context, string, string) (*stripe.Subscription, error) { return nil, nil }
	newHandlers := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.NewAction(hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id"}, action)
		idempotency.NewTask(hs, "send-receipt", task)
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
		return hs
	}
	for _, tc := range []struct {
		prefix   string
		register func(hs *idempotency.Handlers)
	}{
		{`NewAction "grant ": ActionSpec.Name has leading or trailing white space`, func(hs *idempotency.Handlers) {
			idempotency.NewAction(hs, idempotency.ActionSpec{Name: "grant ", Key: "invoice id"}, action)
		}},
		{`NewAction "grant": already registered`, func(hs *idempotency.Handlers) {
			idempotency.NewAction(hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id"}, action)
		}},
		{`NewAction "grant-2": nil func`, func(hs *idempotency.Handlers) {
			idempotency.NewAction[int](hs, idempotency.ActionSpec{Name: "grant-2", Key: "invoice id"}, nil)
		}},
		{`NewTask "Send": name is not`, func(hs *idempotency.Handlers) { idempotency.NewTask(hs, "Send", task) }},
		{`NewTask "send-email": nil func`, func(hs *idempotency.Handlers) { idempotency.NewTask[int](hs, "send-email", nil) }},
		{`NewTask "send-receipt": already registered`, func(hs *idempotency.Handlers) { idempotency.NewTask(hs, "send-receipt", task) }},
		{`On: event type "invoice.*" is a wildcard`, func(hs *idempotency.Handlers) { idempotency.On(hs, "invoice.*", handler) }},
		{`On: nil func for "invoice.created"`, func(hs *idempotency.Handlers) {
			idempotency.On[*stripe.Invoice](hs, "invoice.created", nil)
		}},
		{`On: already registered: event type "invoice.paid"`, func(hs *idempotency.Handlers) { idempotency.On(hs, "invoice.paid", handler) }},
		{`OnCurrent: event type "customer.subscription.*" is a wildcard`, func(hs *idempotency.Handlers) {
			idempotency.OnCurrent(hs, []string{"customer.subscription.*"}, fetch, handler)
		}},
		{`OnCurrent: empty event type`, func(hs *idempotency.Handlers) {
			idempotency.OnCurrent(hs, []string{""}, fetch, handler)
		}},
		{`OnCurrent: already registered: event type "invoice.paid"`, func(hs *idempotency.Handlers) {
			idempotency.OnCurrent(hs, []string{"invoice.paid"}, fetch, handler)
		}},
		{`OnCurrent: already registered: event type "customer.subscription.updated" is given twice`, func(hs *idempotency.Handlers) {
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated", "customer.subscription.updated"}, fetch, handler)
		}},
	} {
		err := recoverError(t, func() { tc.register(newHandlers()) })
		require.True(t, strings.HasPrefix(err.Error(), "idempotency: "+tc.prefix), "%s\nwant the prefix %s", err, tc.prefix)
		if strings.Contains(tc.prefix, "already registered") {
			require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		}
	}
}
