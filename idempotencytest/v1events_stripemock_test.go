package idempotencytest_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/stripemock"
)

// TestV1EventsAgreesWithStripeMock: through stripe-go, V1Events and
// stripe-mock (Stripe's OpenAPI spec) answer each shape of list request
// Recover makes with a list of the same fields, which decodes to a
// stripe.EventList; the event stripe-mock lists, added to the V1Events,
// is listed as stripe-mock lists it; and a parameter the spec does not
// have is refused by both, 400 invalid_request_error. stripe-mock ignores
// filters and cursors: what each lists for them is V1Events' tests'.
func TestV1EventsAgreesWithStripeMock(t *testing.T) {
	t.Parallel()
	mock := stripe.NewClient("sk_test_123", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(stripemock.Start(t)), MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	list := func(client *stripe.Client, params *stripe.EventListParams) (*stripe.EventList, map[string]json.RawMessage, error) {
		// As Recover requests a page.
		values := &form.Values{}
		form.AppendTo(values, params)
		var page stripe.EventList
		if err := client.V1Events.B.CallRaw(http.MethodGet, "/v1/events", "sk_test_123", []byte(values.Encode()), &stripe.Params{}, &page); err != nil {
			return nil, nil, err
		}
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(page.LastResponse.RawJSON, &fields))
		return &page, fields, nil
	}

	first := &stripe.EventListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(100)}}
	mocked, mockFields, err := list(mock, first)
	require.NoError(t, err)
	require.NotEmpty(t, mocked.Data)
	ev := mocked.Data[0]
	api := idempotencytest.NewV1Events()
	var events []json.RawMessage
	require.NoError(t, json.Unmarshal(mockFields["data"], &events))
	api.AddUndelivered(events[0])
	faked := idempotencytest.NewStripeClient("sk_test_123", api)

	since := ev.Created - 3600
	for name, params := range map[string]*stripe.EventListParams{
		"first page": {
			ListParams:   stripe.ListParams{Limit: stripe.Int64(100)},
			CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since},
			Types:        stripe.StringSlice([]string{string(ev.Type)}), DeliverySuccess: stripe.Bool(false),
		},
		"window, walking back": {
			ListParams:   stripe.ListParams{Limit: stripe.Int64(100), StartingAfter: stripe.String(ev.ID)},
			CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since, LesserThan: ev.Created + 1},
		},
		"forward": {
			ListParams:   stripe.ListParams{Limit: stripe.Int64(100), EndingBefore: stripe.String(ev.ID)},
			CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since},
		},
	} {
		mocked, mockFields, err := list(mock, params)
		require.NoError(t, err, name)
		page, fields, err := list(faked, params)
		require.NoError(t, err, name)
		require.Equal(t, slices.Sorted(maps.Keys(mockFields)), slices.Sorted(maps.Keys(fields)), name)
		require.JSONEq(t, `"list"`, string(fields["object"]), name)
		require.Equal(t, mocked.URL, page.URL, name)
		if name == "first page" {
			require.Equal(t, mocked.HasMore, page.HasMore, name)
			require.Len(t, page.Data, 1, name)
			require.Equal(t, *ev, *page.Data[0], name)
		}
	}

	bad := &stripe.EventListParams{}
	bad.Filters.AddFilter("not_a_parameter", "", "1")
	for name, client := range map[string]*stripe.Client{"stripe-mock": mock, "V1Events": faked} {
		_, _, err := list(client, bad)
		var se *stripe.Error
		require.ErrorAs(t, err, &se, name)
		require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode, name)
		require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type, name)
	}
}
