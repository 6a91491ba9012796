package idempotencytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// stripeEvent returns the Stripe event fixture name of the module's
// testdata/stripe-events.
func stripeEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "stripe-events", name+".json"))
	require.NoError(t, err)
	return b
}

// objectOf returns the members of the JSON object at path (keys) of
// payload, each as its exact bytes, and its keys in their order.
func objectOf(t *testing.T, payload []byte, path ...string) (map[string]json.RawMessage, []string) {
	t.Helper()
	raw := json.RawMessage(payload)
	for _, key := range path {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &m))
		raw = m[key]
	}
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	dec := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, key.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return m, keys
}

// TestDeriveSetsFieldsByPath: Derive makes another event of a fixture, a
// checkout session's delayed payment that succeeded for another order of
// a connected account, which a real Handler decodes with the values set:
// fields replaced at the top and in data.object, a key added to the empty
// metadata and at the top (account), nil setting null. The fixture is
// not modified, and the fields left alone keep their places and their
// exact bytes.
func TestDeriveSetsFieldsByPath(t *testing.T) {
	t.Parallel()
	completed := stripeEvent(t, "checkout.session.completed")
	original := bytes.Clone(completed)
	paid := idempotencytest.Derive(completed, map[string]any{
		"id":                            "evt_derived_paid",
		"type":                          "checkout.session.async_payment_succeeded",
		"created":                       1767225600,
		"account":                       "acct_derived",
		"data.object.id":                "cs_derived",
		"data.object.payment_status":    stripe.CheckoutSessionPaymentStatusPaid,
		"data.object.metadata.order_id": "order_<&>",
		"data.object.cancel_url":        nil,
	})
	require.Equal(t, original, completed, "the fixture is not modified")
	require.True(t, json.Valid(paid))

	type seen struct {
		id, account, session, orderID, cancelURL string
		status                                   stripe.CheckoutSessionPaymentStatus
		created                                  int64
	}
	got := make(chan seen, 1)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "checkout.session.async_payment_succeeded",
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.CheckoutSession]) error {
			got <- seen{ev.ID, ev.Account, ev.Object.ID, ev.Object.Metadata["order_id"], ev.Object.CancelURL, ev.Object.PaymentStatus, ev.Created.Unix()}
			return nil
		})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret},
		Logger:  slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, paid, testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, seen{"evt_derived_paid", "acct_derived", "cs_derived", "order_<&>", "", stripe.CheckoutSessionPaymentStatusPaid, 1767225600}, <-got)

	before, beforeKeys := objectOf(t, completed)
	after, afterKeys := objectOf(t, paid)
	require.Equal(t, append(beforeKeys, "account"), afterKeys, "the event's keys in their order, account added last")
	for _, key := range []string{"object", "api_version", "livemode", "pending_webhooks", "request"} {
		require.Equal(t, before[key], after[key], key)
	}
	before, beforeKeys = objectOf(t, completed, "data", "object")
	after, afterKeys = objectOf(t, paid, "data", "object")
	require.Equal(t, beforeKeys, afterKeys, "data.object's keys in their order")
	require.JSONEq(t, `{"order_id":"order_<&>"}`, string(after["metadata"]))
	require.Equal(t, "null", string(after["cancel_url"]))
	for key := range before {
		if !slices.Contains([]string{"id", "payment_status", "metadata", "cancel_url"}, key) {
			require.Equal(t, string(before[key]), string(after[key]), "data.object.%s", key)
		}
	}
}

// TestDeriveChangesOnlyTheValuesSet: the derived payload is the
// original's bytes with the values set replaced, and nothing else: white
// space, key order, an integer beyond float64's precision and a number's
// trailing zero survive. An index names an array's element, in an object
// of an array of an object. A key written with escapes is named as it
// decodes, and a key is added to an empty object with white space in it.
// With no field set, it is a copy.
func TestDeriveChangesOnlyTheValuesSet(t *testing.T) {
	t.Parallel()
	payload := []byte("{\n  \"id\": \"evt_1\",\n  \"n\": 12345678901234567890, \"f\": 1.10,\n" +
		"  \"data\": {\"object\": {\"lines\": {\"data\": [{\"period\": {\"end\": 1, \"start\": 0}}, {\"period\": {\"end\": 2}}]}}}\n}\n")
	got := idempotencytest.Derive(payload, map[string]any{
		"id":                                  "evt_2",
		"data.object.lines.data.1.period.end": json.Number("9007199254740993"),
	})
	want := bytes.Replace(payload, []byte(`"evt_1"`), []byte(`"evt_2"`), 1)
	want = bytes.Replace(want, []byte(`{"end": 2}`), []byte(`{"end": 9007199254740993}`), 1)
	require.Equal(t, string(want), string(got))
	escaped := []byte(`{"id":"evt_1","data":{"\u006fbject":{ "metadata" : { } }}}`)
	require.Equal(t, `{"id":"evt_1","data":{"\u006fbject":{ "metadata" : {"order_id":"o_1" } }}}`,
		string(idempotencytest.Derive(escaped, map[string]any{"data.object.metadata.order_id": "o_1"})))
	same := idempotencytest.Derive(payload, nil)
	require.Equal(t, payload, same)
	same[0] = '['
	require.Equal(t, byte('{'), payload[0], "a copy, also with no field set")

	invoice := idempotencytest.Derive(stripeEvent(t, "invoice.paid"), map[string]any{"data.object.lines.data.0.period.end": int64(1767225600)})
	var ev stripe.Event
	require.NoError(t, json.Unmarshal(invoice, &ev))
	var in stripe.Invoice
	require.NoError(t, json.Unmarshal(ev.Data.Raw, &in))
	require.Equal(t, int64(1767225600), in.Lines.Data[0].Period.End)
	require.Equal(t, int64(1756742400), in.Lines.Data[0].Period.Start)
}

// TestDeriveRefusesAPathThatIsNotThere: a key missing inside a path (a
// typo), a path through a string or null, an index past an array's end or
// a segment of an array that is no index panics naming the path and what
// is there, rather than add a field Stripe never sends, which the handler
// would not read.
func TestDeriveRefusesAPathThatIsNotThere(t *testing.T) {
	t.Parallel()
	invoice := stripeEvent(t, "invoice.paid")
	for path, want := range map[string]string{
		"data.objcet.id": `"data.objcet.id": data has no key "objcet" (its keys: "object"); a key is added only as a path's last segment`,
		"data.object.metdata.order_id": `"data.object.metdata.order_id": data.object has no key "metdata" (its keys: "id", "object", ` +
			`"account_country", "account_name", "account_tax_ids", "amount_due", "amount_overpaid", "amount_paid", "amount_remaining", ` +
			`"amount_shipping", "application", "attempt_count", "attempted", "auto_advance", "automatic_tax", "automatically_finalizes_at", ` +
			`"billing_reason", "collection_method", "created", "currency" and 53 more); a key is added only as a path's last segment`,
		"data.object.customer.id":                `"data.object.customer.id": data.object.customer is a string, which has no field "id"`,
		"data.object.application.id":             `"data.object.application.id": data.object.application is null, which has no field "id"`,
		"data.object.lines.data.1.period.end":    `"data.object.lines.data.1.period.end": data.object.lines.data is an array of 1, and has no index 1; Derive adds no element`,
		"data.object.lines.data.first.period":    `"data.object.lines.data.first.period": data.object.lines.data is an array of 1, and "first" is no index of it`,
		"data.object.lines.data.-1.period.end":   `"data.object.lines.data.-1.period.end": data.object.lines.data is an array of 1, and "-1" is no index of it`,
		"data.object.lines.data.00.period.end":   `"data.object.lines.data.00.period.end": data.object.lines.data is an array of 1, and "00" is no index of it`,
		"data.object.lines.data.0.period.end.at": `"data.object.lines.data.0.period.end.at": data.object.lines.data.0.period.end is a number, which has no field "at"`,
	} {
		require.PanicsWithValue(t, "idempotencytest: Derive: "+want, func() {
			idempotencytest.Derive(invoice, map[string]any{"id": "evt_typo", path: 1})
		}, path)
	}
	require.Equal(t, stripeEvent(t, "invoice.paid"), invoice, "the fixture is not modified")
}

// TestDeriveRefusesMisuse: a payload that is not a JSON object, a path
// that is empty or has an empty segment, two paths of which one is inside
// the other, a key twice in the payload (once escaped too), a key with a
// dot in it and a value encoding/json cannot encode panic saying so.
func TestDeriveRefusesMisuse(t *testing.T) {
	t.Parallel()
	const prefix = "idempotencytest: Derive: "
	event := []byte(`{"id":"evt_1","data":{"object":{"id":"in_1","metadata":{}}}}`)
	for _, c := range []struct {
		payload []byte
		fields  map[string]any
		want    string
	}{
		{[]byte(`{"id":`), map[string]any{"id": "evt_2"}, "the payload is not JSON: unexpected end of JSON input"},
		{nil, map[string]any{"id": "evt_2"}, "the payload is not JSON: unexpected end of JSON input"},
		{[]byte(` ["evt_1"]`), map[string]any{"0": "evt_2"}, "the payload is not a JSON object, as an event is"},
		{[]byte(`null`), nil, "the payload is not a JSON object, as an event is"},
		{event, map[string]any{"": "evt_2"}, `the path "" has an empty segment`},
		{event, map[string]any{"data..id": "in_2"}, `the path "data..id" has an empty segment`},
		{event, map[string]any{"data.object.metadata.": "x"}, `the path "data.object.metadata." has an empty segment`},
		{event, map[string]any{"data.object": map[string]any{}, "data.object.id": "in_2"},
			`the paths "data.object" and "data.object.id" overlap: set one of them`},
		{[]byte(`{"id":"evt_1","id":"evt_2"}`), map[string]any{"id": "evt_3"}, `"id": the event has the key "id" twice`},
		{[]byte(`{"id":"evt_1","\u0069d":"evt_2"}`), map[string]any{"id": "evt_3"}, `"id": the event has the key "id" twice`},
		{[]byte(`{"id":"evt_1","a\u002eb":1}`), map[string]any{"a.b": 2},
			`"a.b": the event has no key "a" (its keys: "id", "a.b"); a key is added only as a path's last segment`},
		{event, map[string]any{"data.object.metadata.ch": make(chan int)}, `"data.object.metadata.ch": encoding the value: json: unsupported type: chan int`},
	} {
		original := bytes.Clone(c.payload)
		require.PanicsWithValue(t, prefix+c.want, func() { idempotencytest.Derive(c.payload, c.fields) }, "%s %v", c.payload, c.fields)
		require.Equal(t, original, c.payload)
	}
	// Paths that share a beginning but not a field do not overlap.
	got := idempotencytest.Derive(event, map[string]any{"data.object.id": "in_2", "data.object.id_2": "x", "data.object.metadata.id": "y"})
	require.Equal(t, `{"id":"evt_1","data":{"object":{"id":"in_2","metadata":{"id":"y"},"id_2":"x"}}}`, string(got))
}
