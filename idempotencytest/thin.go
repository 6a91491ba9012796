package idempotencytest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// ThinEvent is a thin (v2) event, as an event destination notifies it and
// GET /v2/core/events/{id} returns it: what [V2Events.Add] makes both from.
type ThinEvent struct {
	// ID is the event's id (evt_...). Required.
	ID string
	// Type is the event's type (v1.billing.meter.error_report_triggered).
	// Required.
	Type string
	// Context is the account the event is of: a connected account's id
	// (acct_...), or a path of accounts (acct_1/acct_2); empty for your own
	// account's. It is the handler's Event.Account, and the event is
	// fetched as it.
	Context string
	// Created is when the event was created; the zero time is the time of
	// Add. Stripe sends it in milliseconds, the handler's Event.Created in
	// seconds.
	Created time.Time
	// Livemode is the event's mode: false, a test-mode event, by default.
	Livemode bool
	// RelatedObject names the object the event is about, as the handler's
	// Event.ObjectID and what an idempotency.OnCurrent registration
	// fetches; nil for an event about none, which an OnCurrent
	// registration skips without a fetch.
	RelatedObject *stripe.RelatedObject
	// Data is the event type's own fields, the handler's Event.Object:
	// a stripe-go struct of the type (stripe.V1BillingMeterErrorReportTriggeredEventData),
	// a map, or JSON as a json.RawMessage (not a []byte, which
	// encoding/json encodes as a base64 string: Add refuses it), encoded
	// with encoding/json; nil for an event without data.
	Data any
	// Changes is the event's changes, the handler's Event.Previous, given
	// as Data is; nil for none.
	Changes any
}

// V2Events is a fake of the Stripe API's GET /v2/core/events/{id}, the
// request a Handler with Config.StripeClient makes for each thin event
// notification it verifies, so that a test delivers thin events without a
// network and without writing Stripe's JSON by hand: [V2Events.Add] keeps
// an event and returns its notification, which [Deliver] signs and sends,
// and a client of [NewStripeClient] on the V2Events is the Handler's
// StripeClient.
//
// It answers an event it keeps only to a request made as its Context (the
// Stripe-Context header, which the Handler sets from the notification's
// context), as the API finds a connected account's event only as that
// account; any other request for an event is answered 404 with Stripe's
// code resource_missing, and any other path 404 Unrecognized request URL,
// each in Stripe's JSON error; every answer has a Request-Id, as
// Stripe's. It does not check the API key. To fail a fetch as Stripe
// does (a rate limit, an error of Stripe's), serve it through a handler
// of your own that calls [WriteStripeError] instead. Serve it on an
// http.ServeMux beside fakes of your own (the objects an OnCurrent
// registration fetches) to have one client reach them all. It is safe for
// concurrent use. The zero value keeps no event and is ready to use, as
// one NewV2Events returns (a field of a test's fixture, for instance).
type V2Events struct {
	mu      sync.Mutex
	events  map[string]v2Event
	fetches map[string]int
}

type v2Event struct {
	context string
	json    []byte
}

// NewV2Events returns a V2Events that keeps no event.
func NewV2Events() *V2Events {
	return &V2Events{}
}

// Add keeps ev, to be answered to the Handler's fetch, and returns its
// thin event notification, the body an event destination sends: to
// deliver with [Deliver] or [NewSignedRequest]. An event of an id added
// before replaces it. Add panics, naming the field, on an ev without an
// ID or a Type, or with Data or Changes that encoding/json cannot encode
// or that is a []byte.
func (f *V2Events) Add(ev ThinEvent) []byte {
	switch {
	case ev.ID == "":
		panic("idempotencytest: V2Events.Add: ThinEvent.ID is empty")
	case ev.Type == "":
		panic("idempotencytest: V2Events.Add: ThinEvent.Type is empty")
	}
	if ev.Created.IsZero() {
		ev.Created = time.Now()
	}
	// The fields both shapes have, in the order Stripe sends them.
	type thin struct {
		ID            string                `json:"id"`
		Object        string                `json:"object"`
		Type          string                `json:"type"`
		Livemode      bool                  `json:"livemode"`
		Created       string                `json:"created"`
		Context       string                `json:"context,omitempty"`
		RelatedObject *stripe.RelatedObject `json:"related_object,omitempty"`
	}
	n := thin{
		ID: ev.ID, Object: "v2.core.event", Type: ev.Type, Livemode: ev.Livemode,
		Created: ev.Created.UTC().Format("2006-01-02T15:04:05.000Z"), Context: ev.Context, RelatedObject: ev.RelatedObject,
	}
	event := struct {
		thin
		Data    any `json:"data,omitempty"`
		Changes any `json:"changes,omitempty"`
	}{thin: n}
	for _, field := range []struct {
		name string
		v    any
		to   *any
	}{{"Data", ev.Data, &event.Data}, {"Changes", ev.Changes, &event.Changes}} {
		if field.v == nil {
			continue
		}
		if _, ok := field.v.([]byte); ok {
			panic(fmt.Sprintf("idempotencytest: V2Events.Add: ThinEvent.%s is a []byte, which encoding/json encodes as a base64 string: "+
				"give JSON as a json.RawMessage", field.name))
		}
		b, err := json.Marshal(field.v)
		if err != nil {
			panic(fmt.Sprintf("idempotencytest: V2Events.Add: ThinEvent.%s: %v", field.name, err))
		}
		*field.to = json.RawMessage(b)
	}
	notification, err := json.Marshal(n)
	if err != nil {
		panic(fmt.Sprintf("idempotencytest: V2Events.Add: %v", err))
	}
	b, err := json.Marshal(event)
	if err != nil {
		panic(fmt.Sprintf("idempotencytest: V2Events.Add: %v", err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.events == nil {
		f.events = map[string]v2Event{}
	}
	f.events[ev.ID] = v2Event{context: ev.Context, json: b}
	return notification
}

// Fetches returns how many requests for the event id f has answered, found
// or not: one per delivery of its notification, but none for one of a
// type without a handler (unless Config.RecordIgnored records it), nor
// for one of an event the store holds already (a duplicate), which the
// Handler answers without a fetch.
func (f *V2Events) Fetches(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches[id]
}

// ServeHTTP answers GET /v2/core/events/{id}.
func (f *V2Events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, body := f.answer(r)
	writeAnswer(w, status, body)
}

func (f *V2Events) answer(r *http.Request) (int, []byte) {
	id, ok := strings.CutPrefix(r.URL.Path, "/v2/core/events/")
	if r.Method != http.MethodGet || !ok || id == "" || strings.Contains(id, "/") {
		return stripeErrorAnswer(http.StatusNotFound, "", "Unrecognized request URL")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fetches == nil {
		f.fetches = map[string]int{}
	}
	f.fetches[id]++
	ev, ok := f.events[id]
	if !ok || ev.context != r.Header.Get("Stripe-Context") {
		return stripeErrorAnswer(http.StatusNotFound, "resource_missing", "No such event")
	}
	return http.StatusOK, ev.json
}

// writeAnswer writes a JSON answer of the Stripe API, with a Request-Id
// as Stripe's unless w has one.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if w.Header().Get("Request-Id") == "" {
		w.Header().Set("Request-Id", newRequestID())
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// stripeErrorAnswer is an error answer of the Stripe API.
func stripeErrorAnswer(status int, code, message string) (int, []byte) {
	return status, stripeErrorBody("invalid_request_error", code, message)
}

// newRequestID returns a request id as Stripe's: req_ and 14 letters or
// digits.
func newRequestID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	id := []byte("req_")
	for range 14 {
		id = append(id, alphabet[rand.IntN(len(alphabet))])
	}
	return string(id)
}
