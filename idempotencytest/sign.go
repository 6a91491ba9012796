package idempotencytest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// SignatureHeader returns the Stripe-Signature header Stripe would send for
// payload signed with secret at time t (a t= element and one v1 signature).
func SignatureHeader(payload []byte, secret string, t time.Time) string {
	return SignatureHeaderSecrets(payload, t, secret)
}

// SignatureHeaderSecrets returns the Stripe-Signature header Stripe sends
// while an endpoint's secret rolls: payload signed at time t with each of
// secrets, a t= element and then one v1 signature per secret, in the order
// given. With one secret it is [SignatureHeader]'s header; with none it has
// no v1, and no Handler accepts it. Set it on a request built by
// [NewSignedRequest] or http.NewRequest to test that a Handler with only
// the old or only the new secret in Config.Secrets verifies the delivery.
func SignatureHeaderSecrets(payload []byte, t time.Time, secrets ...string) string {
	header := "t=" + strconv.FormatInt(t.Unix(), 10)
	for _, secret := range secrets {
		header += ",v1=" + hex.EncodeToString(webhook.ComputeSignature(t, payload, secret))
	}
	return header
}

// NewSignedRequest returns a POST request to target whose body is payload,
// signed with secret at the current time, as Stripe delivers an event. Sign
// the exact bytes you send: a re-encoded payload does not verify.
//
// Like httptest.NewRequest, which builds it, it is an incoming server
// request, for a handler's ServeHTTP: it panics on a target that is not a
// valid URL or path, and an http.Client refuses to send it ("Request.RequestURI
// can't be set in client requests"). To send one to a server over HTTP, set
// its RequestURI to "" first, or build the request with http.NewRequest and
// SignatureHeader.
func NewSignedRequest(target string, payload []byte, secret string) *http.Request {
	return NewSignedRequestAt(target, payload, secret, time.Now())
}

// NewSignedRequestAt is [NewSignedRequest] with the signature timestamp t,
// for testing the tolerance.
func NewSignedRequestAt(target string, payload []byte, secret string, t time.Time) *http.Request {
	req := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", SignatureHeader(payload, secret, t))
	return req
}

// NewSignedRequestJSON encodes event (a stripe.Event, a map, or any value
// that encodes to a Stripe event) with encoding/json and returns it as a
// signed request, like [NewSignedRequest]. A stripe.Event whose Data.Raw is
// empty gets its data.object from Data.Object, which stripe-go does not
// encode. The caller's event is not modified. Like NewSignedRequest, it
// panics on misuse: an event that encoding/json cannot encode, or a nil
// event (nil, a nil pointer or map), which encodes to null.
func NewSignedRequestJSON(target string, event any, secret string) *http.Request {
	switch ev := event.(type) {
	case *stripe.Event:
		if ev != nil {
			event = *ev
		}
	}
	if ev, ok := event.(stripe.Event); ok && ev.Data != nil && len(ev.Data.Raw) == 0 {
		raw, err := json.Marshal(ev.Data.Object)
		if err != nil {
			panic(fmt.Sprintf("idempotencytest: NewSignedRequestJSON: encoding data.object: %v", err))
		}
		data := *ev.Data
		data.Raw = raw
		ev.Data = &data
		event = ev
	}
	payload, err := json.Marshal(event)
	if err != nil {
		panic(fmt.Sprintf("idempotencytest: NewSignedRequestJSON: encoding event: %v", err))
	}
	if string(payload) == "null" {
		panic("idempotencytest: NewSignedRequestJSON: event is nil")
	}
	return NewSignedRequest(target, payload, secret)
}
