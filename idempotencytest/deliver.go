package idempotencytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// Answer is the answer of one delivery sent by [Deliver], [Replay] or
// [ReplayAll].
type Answer struct {
	Status  int
	Outcome idempotency.Outcome // from {"outcome":...}; empty for error answers
	Body    string
	// EventID is the id of the event delivered, read from the payload
	// sent, as a Handler reads it (a thin event notification's id, for
	// one), not from the answer: it tells apart the answers of several
	// events, whatever each was answered (a forged signature's 400 too).
	// It is empty for a payload that is not an event (not JSON, or
	// without a string id, a type or a data.object), which a Handler
	// answers 400 invalid_event.
	EventID string
}

// Answers are the answers of several deliveries.
type Answers []Answer

// Count returns how many answers have outcome o.
func (as Answers) Count(o idempotency.Outcome) int {
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
// each as [Deliver] does, as Stripe's retries and duplicate sends might,
// and returns the answers in no particular order. The deliveries are
// released together once all n goroutines are ready. It returns when every
// delivery has been answered. It panics when n is negative.
func Replay(h http.Handler, payload []byte, secret string, n int) Answers {
	return replay("Replay", h, [][]byte{payload}, secret, n)
}

// ReplayAll is [Replay] of several payloads at once: it delivers each of
// payloads n times, all concurrently to h, as Stripe's twin events (two
// event ids for one change, such as invoice.paid and
// invoice.payment_succeeded of one invoice) and their copies might race.
// The len(payloads)*n deliveries are released together once all their
// goroutines are ready. answers[i*n+j] is the answer of the j-th copy of
// payloads[i] (its [Answer.EventID] names the event too). It returns when
// every delivery has been answered. It panics when n is negative.
func ReplayAll(h http.Handler, payloads [][]byte, secret string, n int) Answers {
	return replay("ReplayAll", h, payloads, secret, n)
}

// replay is Replay and ReplayAll, which name themselves in a panic.
func replay(name string, h http.Handler, payloads [][]byte, secret string, n int) Answers {
	if n < 0 {
		panic(fmt.Sprintf("idempotencytest: %s: n is %d; it must not be negative", name, n))
	}
	answers := make(Answers, len(payloads)*n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(len(answers))
	done.Add(len(answers))
	for p, payload := range payloads {
		id := eventIDOf(payload)
		for c := range n {
			req := NewSignedRequest("/", payload, secret)
			go func() {
				defer done.Done()
				rec := httptest.NewRecorder()
				ready.Done()
				<-start
				h.ServeHTTP(rec, req)
				answers[p*n+c] = answerOf(rec, id)
			}()
		}
	}
	ready.Wait()
	close(start)
	done.Wait()
	return answers
}

// Deliver sends payload, signed with secret, once to h as a POST to "/",
// and returns the answer. h is the webhook handler itself (an
// idempotency.Handler, or an Inbox's): a router that serves it on its
// route answers "/" 404. To go through the router, serve it
// [NewSignedRequest] with the route's path.
func Deliver(h http.Handler, payload []byte, secret string) Answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, NewSignedRequest("/", payload, secret))
	return answerOf(rec, eventIDOf(payload))
}

// eventIDOf is the id of the event payload is, as a Handler reads it: a
// snapshot event's, or a thin event notification's; "" when payload is
// not an event.
func eventIDOf(payload []byte) string {
	env, err := envelope.Parse(payload)
	if errors.Is(err, envelope.ErrThinEvent) {
		n, err := envelope.ParseThin(payload)
		if err != nil {
			return ""
		}
		return n.ID
	}
	if err != nil {
		return ""
	}
	return env.ID
}

func answerOf(rec *httptest.ResponseRecorder, eventID string) Answer {
	a := Answer{Status: rec.Code, Body: rec.Body.String(), EventID: eventID}
	var v struct {
		Outcome idempotency.Outcome `json:"outcome"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &v) == nil {
		a.Outcome = v.Outcome
	}
	return a
}
