package idempotencytest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// V1Events is a fake of the Stripe API's GET /v1/events, the list
// idempotency.Handler.Recover pages through, so that a test recovers
// events without a network and without writing the Events API by hand:
// [V1Events.Add] keeps a snapshot event Stripe delivered, the payload a
// test delivers with [Deliver], and [V1Events.AddUndelivered] one whose
// delivery failed, and a client of [NewStripeClient] on the V1Events is
// Recover's client.
//
// It lists as Stripe does what Recover asks for: the events newest first
// (by created, and those of one second in the reverse of the order they
// were added), limit (10 by default, 1 to 100), the cursors
// starting_after (older events) and ending_before (newer ones, the page
// still newest first), has_more in the direction asked, created (a Unix
// time, or its bounds created[gte], created[gt], created[lte] and
// created[lt]), types[] (exact types, at most 20) or type (one, with *
// its only wildcard, as Stripe's: ?, [ and \ match themselves), and
// delivery_success. An event of a connected account (its payload's
// "account") is listed only to a request made as that account
// (Stripe-Account), and the platform's own only to one without it. A
// parameter it does not take, a value out of bounds, both cursors, both
// type and types[], or a cursor it does not list (of another account, or
// none) is answered 400 (with Stripe's code and the parameter's name as
// its param: parameter_unknown for one it does not take,
// parameter_invalid_integer for a number that is not an integer,
// resource_missing for a cursor, no code for a value out of bounds or both
// cursors, as Stripe), and any other path 404 Unrecognized
// request URL, each in Stripe's JSON error, rather than a list that would
// look empty. So is expand[] (param expand, no code), which Stripe takes:
// V1Events lists each event as Add kept it and expands nothing, and a
// list of unexpanded objects would fail a test elsewhere; write the
// expanded object into the payload instead. Every answer has a
// Request-Id, as Stripe's. It does not check the API key. To answer a
// request as Stripe fails one (a 429, a 500, a 401), serve it through a
// handler of your own that calls [WriteStripeError] instead. It is safe
// for concurrent use. The zero value keeps no event and is ready to use,
// as one NewV1Events returns.
type V1Events struct {
	mu       sync.Mutex
	events   []v1Event // in the order added
	requests int
}

type v1Event struct {
	id, typ, account string
	created          int64
	delivered        bool
	json             json.RawMessage
}

// NewV1Events returns a V1Events that keeps no event.
func NewV1Events() *V1Events {
	return &V1Events{}
}

// Add keeps payload, a snapshot event as Stripe sends it (with its id,
// type and created, and account for a connected account's), as one Stripe
// delivered to the endpoint, to be listed as it is, and returns it, to
// deliver with [Deliver]. A request with delivery_success=true lists it,
// one with delivery_success=false does not (see
// [V1Events.AddUndelivered]). An event added after another of the same
// second is the newer. An event of an id added before replaces it, in its
// place: Add of an undelivered event's payload is Stripe's retry that
// reached the endpoint. Add panics, naming the field, on a payload that
// is not a JSON object, has no id, no type, or no created (the Unix time
// in seconds Stripe lists events by) above 0, a created after the year
// 9999 (one in milliseconds, which the Handler refuses), an account that
// is not one connected account's id (acct_..., not a path of accounts,
// which Recover never lists), or one of these fields of another JSON type
// than Stripe's.
func (f *V1Events) Add(payload []byte) []byte {
	return f.add("Add", payload, true)
}

// AddUndelivered keeps payload as [V1Events.Add] does, but as an event
// whose delivery failed (the endpoint was down, or answered an error),
// what idempotency.RecoverOptions.OnlyUndelivered lists: a request with
// delivery_success=false lists it, one with delivery_success=true does
// not. It returns payload, to deliver late with [Deliver], as Stripe's
// retry would. It panics as Add does.
func (f *V1Events) AddUndelivered(payload []byte) []byte {
	return f.add("AddUndelivered", payload, false)
}

// add keeps payload, delivered or not, for method: Add or AddUndelivered.
func (f *V1Events) add(method string, payload []byte, delivered bool) []byte {
	prefix := "idempotencytest: V1Events." + method + ": "
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
		if !json.Valid(payload) {
			panic(fmt.Sprintf(prefix+"the payload is not JSON: %v", err))
		}
		panic(prefix + "the payload is not a JSON object, as an event is")
	}
	e := v1Event{delivered: delivered}
	for _, field := range []struct {
		name string
		into any
		want string
	}{
		{"id", &e.id, "a string"},
		{"type", &e.typ, "a string"},
		{"account", &e.account, "a string"},
		{"created", &e.created, "a whole number of seconds since the Unix epoch"},
	} {
		if raw, ok := fields[field.name]; ok {
			if err := json.Unmarshal(raw, field.into); err != nil {
				panic(fmt.Sprintf(prefix+"the payload's %s is not %s: %s", field.name, field.want, raw))
			}
		}
	}
	switch {
	case e.id == "":
		panic(prefix + "the payload's id is empty")
	case e.typ == "":
		panic(prefix + "the payload's type is empty")
	case e.created <= 0:
		panic(prefix + "the payload's created is missing or not above 0: Stripe lists events by it")
	case e.account != "" && (!strings.HasPrefix(e.account, "acct_") || strings.Contains(e.account, "/")):
		panic(fmt.Sprintf(prefix+"the payload's account, %q, is not a connected account's id (acct_...): "+
			"a v1 event's account is one account, never a path of accounts as a thin event's context may be, and Recover lists no other", e.account))
	case e.created > maxCreated:
		panic(fmt.Sprintf(prefix+"the payload's created, %d, is after the year 9999: "+
			"created is in seconds since the Unix epoch, not milliseconds", e.created))
	}
	e.json = slices.Clone(payload)
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.IndexFunc(f.events, func(o v1Event) bool { return o.id == e.id }); i >= 0 {
		f.events[i] = e
	} else {
		f.events = append(f.events, e)
	}
	return payload
}

// Requests returns how many requests f has answered, refused ones
// included: what idempotency.RecoverReport.Requests counts, when every
// request of the client reached f.
func (f *V1Events) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// ServeHTTP answers GET /v1/events.
func (f *V1Events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, body := f.answer(r)
	writeAnswer(w, status, body)
}

func (f *V1Events) answer(r *http.Request) (int, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if r.Method != http.MethodGet || r.URL.Path != "/v1/events" {
		return stripeErrorAnswer(http.StatusNotFound, "", "Unrecognized request URL")
	}
	q, refused := parseV1EventsQuery(r.URL.Query())
	if refused != nil {
		return http.StatusBadRequest, refused.body()
	}
	account := r.Header.Get("Stripe-Account")
	// listed: the events the request lists, newest first.
	var listed []int
	for i, e := range f.events {
		if e.account == account {
			listed = append(listed, i)
		}
	}
	slices.SortStableFunc(listed, func(a, b int) int {
		return cmp.Or(cmp.Compare(f.events[b].created, f.events[a].created), b-a)
	})
	cursor, cursorParam := q.startingAfter, "starting_after"
	if q.endingBefore != "" {
		cursor, cursorParam = q.endingBefore, "ending_before"
	}
	at := -1
	if cursor != "" {
		if at = slices.IndexFunc(listed, func(i int) bool { return f.events[i].id == cursor }); at < 0 {
			return http.StatusBadRequest, invalidRequest("resource_missing", cursorParam, "No such event: '%s'", cursor).body()
		}
	}
	// rest: the events past the cursor that the filters keep, newest
	// first; the page is the limit of them nearest the cursor.
	switch {
	case q.startingAfter != "":
		listed = listed[at+1:]
	case q.endingBefore != "":
		listed = listed[:at]
	}
	rest := q.filter(f.events, listed)
	page, hasMore := rest[:min(q.limit, len(rest))], len(rest) > q.limit
	if q.endingBefore != "" {
		page = rest[max(0, len(rest)-q.limit):]
	}
	// Written out rather than encoded: encoding/json would compact each
	// payload and escape its <, > and &, and the event is listed as added.
	var body bytes.Buffer
	body.WriteString(`{"object":"list","data":[`)
	for j, i := range page {
		if j > 0 {
			body.WriteByte(',')
		}
		body.Write(f.events[i].json)
	}
	fmt.Fprintf(&body, `],"has_more":%t,"url":"/v1/events"}`, hasMore)
	return http.StatusOK, body.Bytes()
}

// v1EventsQuery is what a request of GET /v1/events asks for.
type v1EventsQuery struct {
	limit                       int
	startingAfter, endingBefore string
	gte, lte                    int64 // created bounds, inclusive
	types                       []string
	typePattern                 string // type, with * its one wildcard
	delivered                   *bool  // delivery_success
}

// maxCreated is the last second of the year 9999, the latest created the
// Handler takes.
const maxCreated = 253402300799

// maxV1EventsTypes is how many types[] the Events API takes.
const maxV1EventsTypes = 20

// parseV1EventsQuery returns the query of values, or Stripe's error
// refusing it.
func parseV1EventsQuery(values url.Values) (v1EventsQuery, *stripeError) {
	q := v1EventsQuery{limit: 10, gte: 0, lte: math.MaxInt64}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		vals := values[key]
		if key == "expand" || strings.HasPrefix(key, "expand[") {
			// Stripe takes it; the fake cannot honour it, and a list of
			// unexpanded objects would fail the test elsewhere.
			return q, invalidRequest("", "expand", "idempotencytest.V1Events expands nothing (%s): it lists each event as Add kept it; "+
				"write the expanded object into the payload instead", strings.Join(vals, ", "))
		}
		if len(vals) > 1 && key != "types[]" {
			return q, invalidRequest("", key, "%s is given %d times", key, len(vals))
		}
		v := vals[0]
		var n int64
		if key == "created" || strings.HasPrefix(key, "created[") {
			var err error
			if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n == math.MaxInt64 {
				return q, invalidRequest("parameter_invalid_integer", key, "Invalid integer: %s (%s)", v, key)
			}
		}
		switch {
		case key == "limit":
			var err error
			if q.limit, err = strconv.Atoi(v); err != nil || q.limit < 1 || q.limit > 100 {
				code := "" // Stripe has no code for a value out of bounds
				if err != nil {
					code = "parameter_invalid_integer"
				}
				return q, invalidRequest(code, key, "Invalid limit: must be an integer between 1 and 100 (%s)", v)
			}
		case key == "starting_after":
			q.startingAfter = v
		case key == "ending_before":
			q.endingBefore = v
		case key == "created":
			q.gte, q.lte = max(q.gte, n), min(q.lte, n)
		case key == "created[gte]":
			q.gte = max(q.gte, n)
		case key == "created[gt]":
			q.gte = max(q.gte, n+1)
		case key == "created[lte]":
			q.lte = min(q.lte, n)
		case key == "created[lt]":
			q.lte = min(q.lte, n-1)
		case key == "delivery_success":
			b, perr := strconv.ParseBool(v)
			if perr != nil {
				return q, invalidRequest("", key, "Invalid boolean: %s (delivery_success)", v)
			}
			q.delivered = &b
		case key == "type":
			if v == "" {
				return q, invalidRequest("", key, "Invalid type: %q", v)
			}
			q.typePattern = v
		case strings.HasPrefix(key, "types[") && strings.HasSuffix(key, "]"): // types[] or types[0]
			q.types = append(q.types, vals...)
		default:
			return q, invalidRequest("parameter_unknown", key, "Received unknown parameter: %s (idempotencytest.V1Events takes what Recover sends)", key)
		}
	}
	switch {
	case q.startingAfter != "" && q.endingBefore != "":
		return q, invalidRequest("", "", "Received both starting_after and ending_before parameters. Please pass in only one.")
	case len(q.types) > maxV1EventsTypes:
		return q, invalidRequest("", "types", "Invalid types: at most %d types, %d given", maxV1EventsTypes, len(q.types))
	case len(q.types) > 0 && q.typePattern != "":
		return q, invalidRequest("", "", "Received both type and types[]: idempotencytest.V1Events takes one or the other")
	}
	return q, nil
}

// invalidRequest is Stripe's error refusing a request of GET /v1/events,
// with its code (none for a value out of bounds or two parameters that
// exclude each other: Stripe has no code for them) and the parameter
// refused.
func invalidRequest(code, param, format string, args ...any) *stripeError {
	return &stripeError{Type: "invalid_request_error", Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// filter returns the events of list (indexes of events) that q's filters
// keep, in list's order.
func (q v1EventsQuery) filter(events []v1Event, list []int) []int {
	var kept []int
	for _, i := range list {
		e := events[i]
		if e.created < q.gte || e.created > q.lte ||
			len(q.types) > 0 && !slices.Contains(q.types, e.typ) ||
			q.typePattern != "" && !typeMatches(q.typePattern, e.typ) ||
			q.delivered != nil && e.delivered != *q.delivered {
			continue
		}
		kept = append(kept, i)
	}
	return kept
}

// typeMatches reports whether typ matches pattern, a type with * a
// wildcard (any run of characters, none included), as the Events API's
// type parameter takes it: every other character is itself.
func typeMatches(pattern, typ string) bool {
	parts := strings.Split(pattern, "*")
	rest, ok := strings.CutPrefix(typ, parts[0])
	if !ok {
		return false
	}
	if len(parts) == 1 {
		return rest == ""
	}
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return strings.HasSuffix(rest, last)
}
