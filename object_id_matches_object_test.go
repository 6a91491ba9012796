package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Event.ObjectID, the key of the inbox's per-object order, of early guards
// and of OnCurrent's fetch, is the id the handler's object decodes to,
// also when data.object repeats "id" with a null last: encoding/json (and
// so stripe-go) keeps the earlier id there, where the envelope parser
// used to give "".
func TestObjectIDIsTheDecodedObjectsID(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	var got idempotency.Event[*stripe.Invoice]
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		got = ev
		return nil
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	body := `{"id":"evt_object_id_null","object":"event","type":"invoice.paid","api_version":"2025-08-27.basil",` +
		`"data":{"object":{"id":"in_1","object":"invoice","amount_due":5,"id":null}}}`
	a := idempotencytest.Deliver(h, []byte(body), testSecret)
	require.Equal(t, 200, a.Status, a.Body)
	require.NotNil(t, got.Object)
	require.Equal(t, "in_1", got.Object.ID)
	require.Equal(t, got.Object.ID, got.ObjectID)
}
