package idempotency

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// This file holds helpers for the tests of services that use the package:
// signing payloads as Stripe does, and replaying one delivery concurrently.

// SignatureHeader returns the Stripe-Signature header Stripe would send for
// payload signed with secret at time t (a t= element and one v1 signature).
func SignatureHeader(payload []byte, secret string, t time.Time) string {
	sig := webhook.ComputeSignature(t, payload, secret)
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + hex.EncodeToString(sig)
}

// NewSignedRequest returns a POST request to target whose body is payload,
// signed with secret at the current time, as Stripe delivers an event. Sign
// the exact bytes you send: a re-encoded payload does not verify.
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
// encode.
func NewSignedRequestJSON(target string, event any, secret string) (*http.Request, error) {
	switch ev := event.(type) {
	case *stripe.Event:
		if ev != nil {
			event = *ev
		}
	}
	if ev, ok := event.(stripe.Event); ok && ev.Data != nil && len(ev.Data.Raw) == 0 {
		raw, err := json.Marshal(ev.Data.Object)
		if err != nil {
			return nil, fmt.Errorf("idempotency: encoding data.object: %w", err)
		}
		data := *ev.Data
		data.Raw = raw
		ev.Data = &data
		event = ev
	}
	payload, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("idempotency: encoding event: %w", err)
	}
	return NewSignedRequest(target, payload, secret), nil
}

// Answer is one answer of a delivery sent by [Replay].
type Answer struct {
	Status  int
	Outcome Outcome // from {"outcome":...}; empty for error answers
	Body    string
}

// Answers are the answers of several deliveries.
type Answers []Answer

// Count returns how many answers have outcome o.
func (as Answers) Count(o Outcome) int {
	n := 0
	for _, a := range as {
		if a.Outcome == o {
			n++
		}
	}
	return n
}

// Statuses counts the answers by HTTP status.
func (as Answers) Statuses() map[int]int {
	m := make(map[int]int)
	for _, a := range as {
		m[a.Status]++
	}
	return m
}

// Replay delivers payload, signed with secret, n times concurrently to h,
// as Stripe's retries and duplicate sends might, and returns the answers in
// no particular order. The deliveries are released together once all n
// goroutines are ready. It returns when every delivery has been answered.
func Replay(h http.Handler, payload []byte, secret string, n int) Answers {
	answers := make(Answers, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		req := NewSignedRequest("/", payload, secret)
		go func() {
			defer done.Done()
			rec := httptest.NewRecorder()
			ready.Done()
			<-start
			h.ServeHTTP(rec, req)
			answers[i] = answerOf(rec)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return answers
}

// Deliver sends payload, signed with secret, once to h and returns the
// answer.
func Deliver(h http.Handler, payload []byte, secret string) Answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, NewSignedRequest("/", payload, secret))
	return answerOf(rec)
}

func answerOf(rec *httptest.ResponseRecorder) Answer {
	a := Answer{Status: rec.Code, Body: rec.Body.String()}
	var v struct {
		Outcome Outcome `json:"outcome"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &v) == nil {
		a.Outcome = v.Outcome
	}
	return a
}
