package idempotency

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// The Stripe API calls the package makes itself, all through the user's
// stripe-go client (its key, backend, retries and HTTP client), and all
// keeping the bytes Stripe sent: a handler's Event.Raw is the event as
// Stripe rendered it, never a re-encoding of stripe-go's structs, which
// would drop the fields stripe-go does not know.

// withinContext returns call's result, or ctx's error as soon as ctx is
// done, whichever comes first. call is a stripe-go request made on ctx:
// stripe-go sleeps before each of its retries (MaxNetworkRetries, 2 by
// default; up to 5 s a sleep) without watching the context, so a request
// whose context ended would otherwise return only after the sleep. call
// goes on alone until then, and its next attempt fails on the done
// context. A panic of call is raised again on the caller's goroutine.
func withinContext[T any](ctx context.Context, call func() (T, error)) (T, error) {
	type result struct {
		v        T
		err      error
		panicked bool
		p        any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if r.panicked {
				r.p = recover()
			}
			done <- r
		}()
		r.panicked = true
		r.v, r.err = call()
		r.panicked = false
	}()
	select {
	case r := <-done:
		if r.panicked {
			panic(r.p)
		}
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// rawEventPage is one page of GET /v1/events with its events as sent.
type rawEventPage struct {
	stripe.APIResource
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// listEvents requests one page of GET /v1/events, encoding params as
// stripe-go's own V1Events.List does.
func listEvents(ctx context.Context, c *stripe.Client, params *stripe.EventListParams) (*rawEventPage, error) {
	values := &form.Values{}
	form.AppendTo(values, params)
	page, err := withinContext(ctx, func() (*rawEventPage, error) {
		page := &rawEventPage{}
		return page, c.V1Events.B.CallRaw(http.MethodGet, "/v1/events", c.V1Events.Key, []byte(values.Encode()),
			&stripe.Params{Context: ctx, StripeAccount: params.StripeAccount}, page)
	})
	if err != nil {
		return nil, apiError("listing events", err)
	}
	if page.Object != "list" {
		// JSON, but not the Stripe API's list (a proxy's {"status":"ok"}):
		// read as a page, it would be an empty one with nothing after it,
		// the end of the events.
		return nil, notAskedFor("listing events", "not a list of events: JSON of another kind, not the Stripe API's answer", page.LastResponse)
	}
	return page, nil
}

// notAskedFor is the error of a request answered with JSON that is not
// what was asked for, named by says ("not a list of events: ..."); res is
// the answer when the client's backend kept it.
func notAskedFor(op, says string, res *stripe.APIResponse) error {
	e := &stripeAPIError{op: op, unreadable: true, notAsked: says}
	if res != nil {
		e.status = res.StatusCode
	}
	return e
}

// v2EventAnswer is the answer of GET /v2/core/events/{id}, read for its
// kind alone (any: JSON whose "object" is not a string is no event
// either); the event itself is returned as sent.
type v2EventAnswer struct {
	stripe.APIResource
	Object any `json:"object"`
}

// retrieveV2Event returns GET /v2/core/events/{id} as sent, as the account
// or context stripeContext names when it is not empty (Stripe-Context).
// JSON whose object is not "v2.core.event" (a proxy's {"status":"ok"}) is
// an answer not asked for (notAskedFor), which a later request may pass.
//
// It goes through the backend's Call, as V2CoreEvents.Retrieve does.
// stripe-go reads a v2 error answer without its HTTP status (a
// *stripe.V2RawError: type and code); its RawRequest would keep it, but in
// v82.5.1 it dereferences a nil response when the request gets no answer.
func retrieveV2Event(ctx context.Context, c *stripe.Client, id, stripeContext string) ([]byte, error) {
	params := &stripe.V2CoreEventRetrieveParams{}
	params.Context = ctx
	if stripeContext != "" {
		params.SetStripeContext(stripeContext)
	}
	res, err := withinContext(ctx, func() (*v2EventAnswer, error) {
		var res v2EventAnswer
		return &res, c.V2CoreEvents.B.Call(http.MethodGet, stripe.FormatURLPath("/v2/core/events/%s", id), c.V2CoreEvents.Key, params, &res)
	})
	if err != nil {
		e := apiError("retrieving the v2 event", err)
		// Stripe notified the event, so it exists: not found, it was
		// asked for with a key of another account or mode than its own,
		// or as another context.
		as := "as the notification's context " + stripeContext
		if stripeContext == "" {
			as = "as its own account (the notification has no context)"
		}
		e.notFound = "no such event for Config.StripeClient's API key, fetched " + as +
			": is the key of the account the event destination belongs to, and of the event's mode?"
		return nil, e
	}
	if res.LastResponse == nil {
		return nil, errorf("%w: retrieving the v2 event: the client's backend kept no answer", ErrStripeAPI)
	}
	if res.Object != "v2.core.event" {
		// JSON that is not a v2 event (a proxy's {"status":"ok"}): not
		// Stripe's event, malformed, but an answer not asked for, as
		// Retrieve and Recover take one.
		return nil, notAskedFor("retrieving the v2 event", "not a v2 event of the Stripe API: JSON of another kind", res.LastResponse)
	}
	return res.LastResponse.RawJSON, nil
}

// checkStripeClient refuses a client the package cannot make its calls
// through, at construction rather than at each delivery.
func checkStripeClient(field string, c *stripe.Client) error {
	if c == nil || c.V1Events == nil || c.V1Events.B == nil || c.V2CoreEvents == nil || c.V2CoreEvents.B == nil {
		return errorf("%s is nil or not made by stripe.NewClient", field)
	}
	return nil
}

// apiError wraps a failed request in ErrStripeAPI with what identifies it
// and nothing that could carry the key or a payload: stripe.Error's own
// text is its JSON, message and all, and an answer stripe-go cannot read
// becomes an error that quotes the body. Such an answer is not the Stripe
// API's when its status is an error's (Stripe answers errors in JSON): a
// proxy's, a load balancer's or a gateway's between the service and
// Stripe (a 502, 503 or 504 with an HTML page or an empty body); its
// error names its status and says so. It is never nil.
func apiError(op string, err error) *stripeAPIError {
	e := &stripeAPIError{op: op}
	undecoded := undecodedStatus(err)
	var se *stripe.Error
	var v2 *stripe.V2RawError
	var ue *url.Error
	var ne net.Error
	switch {
	case errors.As(err, &se):
		e.status, e.typ, e.code, e.requestID = se.HTTPStatusCode, answerToken(string(se.Type)), answerToken(string(se.Code)), answerToken(se.RequestID)
		e.answer, e.otherMode = se, keyOfOtherMode(se)
	case errors.As(err, &v2):
		if v2.Type != nil {
			e.typ = answerToken(string(*v2.Type))
		}
		e.code = answerToken(v2.Code)
		e.answer = v2
	case errors.As(err, &ue), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The network, a timeout or the context: a *url.Error's text names
		// the URL (path and list filters), never the key, which travels in
		// a header, unless the base URL carries it as its user name
		// (http://sk_...@host, as curl -u puts it): Go hides only a
		// password, so the URL's user information is masked whole, also
		// in a URL that does not parse (the request then fails before it
		// is sent, quoting it).
		e.cause = err
		if ue != nil {
			if masked, ok := maskedUserinfo(ue.URL); ok {
				e.causeText = strings.ReplaceAll(err.Error(), ue.Error(), (&url.Error{Op: ue.Op, URL: masked, Err: ue.Err}).Error())
			}
		}
	case strings.HasPrefix(err.Error(), unknownPathPrefix):
		// A base URL without a scheme ("api.stripe.com", "localhost:12111"),
		// or with a path of its own ("https://proxy/stripe"; stripe-go
		// strips a trailing /v1 alone), makes a URL whose path stripe-go
		// does not know: it fails the request, unsent or its answer unread.
		// Its text quotes that URL, which may hold a user name.
		e.baseNotHTTP = true
	case undecoded != 0:
		// Not JSON of the shape asked for (an error answer's, or the
		// object's): stripe-go quotes up to 500 bytes of the body; only
		// the status is read of its error.
		e.status, e.unreadable = undecoded, true
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne):
		// The connection ended while stripe-go read the answer's body (a
		// request that got no answer at all is a *url.Error, above).
		e.cause, e.cutShort = err, true
	case bareAnswerJSON(err):
		e.unreadable, e.notStripe = true, true
	default:
		e.unreadable = true
	}
	return e
}

// bareAnswerJSON reports whether err's text is JSON (an object, or null)
// as stripe-go's error of an error answer whose JSON has no Stripe error
// in it (a gateway's {"message":...}) is: errors.New of that body, whole,
// whatever its length.
func bareAnswerJSON(err error) bool {
	text := strings.TrimSpace(err.Error())
	return (strings.HasPrefix(text, "{") || text == "null") && json.Valid([]byte(text))
}

// notStripesJSON names an error of bareAnswerJSON's.
const notStripesJSON = "an error answer that is not the Stripe API's (JSON without Stripe's error; its status not known, its body not quoted)"

// unknownPathPrefix begins the text stripe-go v82 gives the error of a
// request whose URL's path does not begin with /v1 or /v2: the client's
// base URL has no scheme, so that the whole URL reads as a path, or a path
// of its own. TestStripeAPIRequestNoLaterOnePasses fails if a release of
// stripe-go words it otherwise.
const unknownPathPrefix = "unknown path prefix "

// undecodedAnswer is the text stripe-go v82 gives the error of an answer
// whose body does not decode (UnmarshalJSONVerbose): the status, then a
// sample of the body. TestStripeAPIAnswersNotStripes fails if a release
// of stripe-go words it otherwise.
var undecodedAnswer = regexp.MustCompile(`\ACouldn't deserialize JSON \(response status: ([1-5][0-9][0-9]), body sample: '`)

// undecodedStatus is the HTTP status of an answer stripe-go could not
// decode, when err is stripe-go's error of one, and 0 otherwise (also when
// err's Error method panics: a typed nil of a handler's error type).
func undecodedStatus(err error) (status int) {
	defer func() {
		if recover() != nil {
			status = 0
		}
	}()
	m := undecodedAnswer.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	status, _ = strconv.Atoi(m[1])
	return status
}

// maskedUserinfo is u with the user information of its authority, what
// comes before the last '@' ahead of the first '/', '?' or '#' after
// "//" (or from the start), replaced by "***"; ok is false when it has
// none. u need not parse.
func maskedUserinfo(u string) (masked string, ok bool) {
	start := 0
	if i := strings.Index(u, "//"); i >= 0 {
		start = i + 2
	}
	end := len(u)
	if i := strings.IndexAny(u[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(u[start:end], "@")
	if at < 0 {
		return u, false
	}
	return u[:start] + "***" + u[start+at:], true
}

// maxAnswerToken bounds an error type, code or request id quoted from an
// answer: Stripe's are identifiers of a few dozen bytes.
const maxAnswerToken = 64

// answerToken is s, an error type, code or request id from an answer, when
// it is an identifier as Stripe's are (letters, digits, '_', '-', '.', at
// most maxAnswerToken bytes), and a placeholder otherwise: an answer that
// is not Stripe's (a proxy's, a gateway's) may carry anything there, a
// payload or a megabyte, which would reach logs and LastError.
func answerToken(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > maxAnswerToken || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) >= 0 {
		return "(not an identifier, not quoted)"
	}
	return s
}

// stripeAPIError is a request that failed: without an answer, or with
// one cut short (cause set), with an answer stripe-go could not read
// (unreadable; status when stripe-go's error gives it), or with an error
// answer (status, or for a v2 error only its type and code; answer is
// stripe-go's error, for errors.As, never quoted).
type stripeAPIError struct {
	op                   string
	status               int
	typ, code, requestID string
	cause, answer        error
	causeText            string // cause's text with a URL's user information masked; "" when it needs none
	cutShort             bool   // cause ended the answer's body
	unreadable           bool
	notStripe            bool   // unreadable: JSON without Stripe's error object, of an error status not known
	notAsked             string // unreadable: JSON answered, not what was asked for (notAskedFor)
	baseNotHTTP          bool   // the client's base URL has no scheme, or a path (unknownPathPrefix)
	// otherMode is "live" or "test" when Stripe answered that the object
	// exists in that mode, not the API key's (see keyOfOtherMode).
	otherMode string
	// notFound is what a 404 resource_missing means of this request, said
	// after it; "" to say nothing more.
	notFound string
}

// transient reports whether the same request may succeed later: it got no
// answer or one cut short (the network, a timeout), a rate limit (429), a
// failure of Stripe's own or of a proxy or gateway before it (5xx), or an
// answer stripe-go could not read that has no error status (a success
// status whose body is cut short or not JSON) or whose status is not
// known. A refusal (another 4xx, whether Stripe's or a proxy's) is not,
// nor a request no later one passes (unsendable, or baseNotHTTP).
// stripe-go keeps no status of a v2 error answer: its type says it, a
// rate limit (rate_limit) or a failure of Stripe's (api_error).
func (e *stripeAPIError) transient() bool {
	switch {
	case e.baseNotHTTP:
		return false
	case e.cause != nil:
		return !unsendable(e.cause)
	case e.unreadable && e.status < http.StatusBadRequest:
		return true
	case e.status != 0:
		return e.status == http.StatusTooManyRequests || e.status >= http.StatusInternalServerError
	}
	return e.typ == string(stripe.ErrorTypeAPI) || e.typ == "rate_limit_error" || e.typ == "rate_limit" || e.code == "rate_limit"
}

// unsendable reports a request that failed without an answer for a
// reason no later request passes, the client's or the server's
// configuration: the URL does not parse or its scheme is not http or
// https, the server redirects without end or where stripeapi's client
// (idemctl's, the example's) refuses to follow (a *stripeapi.RedirectError),
// or its certificate is not accepted. stripe-go does not retry the first
// three either (it names them by their text, as Go's errors have no type
// of their own); it retries a refused redirect as a network error.
func unsendable(cause error) bool {
	var ue *url.Error
	if !errors.As(cause, &ue) {
		return false
	}
	var cert *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var redirect *stripeapi.RedirectError
	text := fmt.Sprint(ue.Err)
	return ue.Op == "parse" || strings.HasPrefix(text, "unsupported protocol scheme") || redirectsError.MatchString(text) ||
		errors.As(cause, &redirect) ||
		errors.As(cause, &cert) || errors.As(cause, &authority) || errors.As(cause, &host) || errors.As(cause, &invalid)
}

// redirectsError is the text of net/http's error of a request redirected
// more times than the client's CheckRedirect allows (10 by default).
var redirectsError = regexp.MustCompile(`\Astopped after \d+ redirects\z`)

// keyOfOtherMode returns the mode ("live" or "test") a 404
// resource_missing says the object exists in, when the request's API key
// is of the other mode: Stripe's message then says "a similar object
// exists in live mode, but a test mode key was used to make this
// request". No code or field of the answer says so; its message does.
func keyOfOtherMode(se *stripe.Error) string {
	if se.HTTPStatusCode != http.StatusNotFound || se.Code != stripe.ErrorCodeResourceMissing {
		return ""
	}
	for _, mode := range []string{"live", "test"} {
		if strings.Contains(se.Msg, "a similar object exists in "+mode+" mode") {
			return mode
		}
	}
	return ""
}

func (e *stripeAPIError) Error() string {
	s := ErrStripeAPI.Error() + ": " + e.op
	switch {
	case e.baseNotHTTP:
		return s + ": the client's base URL is not an http or https URL without a path (stripe-go: unknown path prefix; no answer read)"
	case e.causeText != "":
		return s + ": " + e.causeText
	case e.cutShort:
		return s + ": the answer was cut short: " + e.cause.Error()
	case e.cause != nil:
		return s + ": " + e.cause.Error()
	case e.notAsked != "":
		s += ": "
		if e.status != 0 {
			s += fmt.Sprintf("HTTP %d, ", e.status)
		}
		return s + e.notAsked + " (its body not quoted)"
	case e.notStripe:
		return s + ": " + notStripesJSON
	case e.unreadable && e.status >= http.StatusBadRequest:
		return s + fmt.Sprintf(": HTTP %d, not an answer of the Stripe API (a proxy's or a gateway's; its body not quoted)", e.status)
	case e.unreadable && e.status != 0:
		return s + fmt.Sprintf(": HTTP %d, an answer stripe-go could not read (cut short, or not the JSON asked for; not quoted: it may hold a payload)", e.status)
	case e.unreadable:
		return s + ": an answer stripe-go could not read (not quoted: it may hold a payload)"
	}
	s += ": " + answerText(e.status, e.typ, e.requestID, e.code)
	switch {
	case e.otherMode != "":
		s += ": the object exists in " + e.otherMode + " mode: the API key is of the other mode (a test key for live events, or a live key for test events)"
	case e.notFound != "" && e.code == string(stripe.ErrorCodeResourceMissing):
		s += ": " + e.notFound
	case e.code == string(stripe.ErrorCodeAccountInvalid):
		// A request made as a connected account (Stripe-Account) that the
		// platform's key has no access to: Stripe answers it 403, as it
		// does a restricted key without a permission, with this code.
		s += ": the platform has no access to the connected account (it disconnected, or there is no such account)"
	case e.status == http.StatusUnauthorized:
		s += ": the API key was refused"
	case e.status == http.StatusForbidden:
		s += ": the API key is not allowed this request (a restricted key without the permission)"
	}
	return s
}

// answerText names an error answer of the Stripe API by its status (when
// known), its error's type and codes (those not empty) and the request
// id: "HTTP 402 card_error (card_declined, insufficient_funds), request
// req_123". Each is an identifier already (answerToken).
func answerText(status int, typ, requestID string, codes ...string) string {
	s := "error"
	if status != 0 {
		s = fmt.Sprintf("HTTP %d", status)
	}
	if typ != "" {
		s += " " + typ
	}
	if codes = slices.DeleteFunc(codes, func(c string) bool { return c == "" }); len(codes) > 0 {
		s += " (" + strings.Join(codes, ", ") + ")"
	}
	if requestID != "" {
		s += ", request " + requestID
	}
	return s
}

// maskedText is err's text with the text of each stripe-go error that err
// wraps replaced by stripeErrorText's: a handler or a task that calls the
// API and returns stripe-go's error, wrapped or not, would otherwise put
// its JSON (the payment intent with its client secret, the payment method
// with the customer's name, email and address, Stripe's message, which
// may quote a parameter's value) in every log line and LastError quoting
// it. A v2 API's error is JSON too (its type, code and message), and is
// read the same way: what it has of those fields, its type and code. The
// error of an answer stripe-go could not decode quotes 500 bytes of its
// body (a proxy's page, which may echo the request's headers and so the
// key, or an object of another shape, a customer's details and all): it
// is named by its status. The error of an error answer whose JSON has no
// Stripe error (a gateway's) is that body whole, and is named as such.
func maskedText(err error) string {
	// fmt, as errorf formatted an operand before: a typed nil error whose
	// Error method panics reads "<nil>".
	text := fmt.Sprint(err)
	for _, e := range stripeErrors(err, nil) {
		raw := e.Error()
		if status := undecodedStatus(e); status != 0 {
			text = strings.ReplaceAll(text, raw, fmt.Sprintf("stripe-go: HTTP %d, an answer it could not decode (its body not quoted: it may hold the key or a payload)", status))
			continue
		}
		if _, ok := e.(bareAnswer); ok {
			if raw != "null" {
				text = strings.ReplaceAll(text, raw, "stripe-go: "+notStripesJSON)
			}
			continue
		}
		if !strings.HasPrefix(raw, "{") {
			continue // not an answer's JSON ("null" of an error made empty)
		}
		se, ok := e.(*stripe.Error)
		if !ok {
			// A typed error (a *stripe.Error's Err) keeps its *stripe.Error
			// unexported; its text is that error's JSON. A v2 error's JSON
			// has a type and a code under the same names.
			se = &stripe.Error{}
			_ = json.Unmarshal([]byte(raw), se) // what does not decode stays unnamed
		}
		text = strings.ReplaceAll(text, raw, stripeErrorText(se))
	}
	return text
}

// stripeErrors appends to found the stripe-go errors of err's tree whose
// text is an answer's JSON: *stripe.Error, and the typed errors of its
// Err; a v2 answer's *stripe.V2RawError and its typed errors; those
// that quote an answer it could not decode (undecodedStatus), and those
// that are an error answer's JSON without Stripe's error (bareAnswerJSON,
// as a bareAnswer); none when
// an Unwrap method panics (a typed nil of a handler's error type).
func stripeErrors(err error, found []error) (all []error) {
	defer func() {
		if recover() != nil {
			all = nil
		}
	}()
	switch e := err.(type) {
	case *stripe.Error, *stripe.APIError, *stripe.CardError, *stripe.InvalidRequestError, *stripe.IdempotencyError,
		*stripe.V2RawError, *stripe.TemporarySessionExpiredError:
		// Not descended into: a *stripe.Error's Err has its text.
		if !isNil(e) {
			found = append(found, e)
		}
	case interface{ Unwrap() error }:
		found = stripeErrors(e.Unwrap(), found)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			found = stripeErrors(inner, found)
		}
	case error:
		// A plain error: stripe-go makes the one of an answer it could
		// not decode with fmt.Errorf, and the one of an error answer
		// without Stripe's error with errors.New, wrapping nothing.
		switch {
		case undecodedStatus(e) != 0:
			found = append(found, e)
		case bareAnswerJSON(e):
			found = append(found, bareAnswer{e})
		}
	}
	return found
}

// bareAnswer is an error of bareAnswerJSON's, among stripeErrors'.
type bareAnswer struct{ error }

// stripeErrorText names a stripe-go error by what identifies it, and
// quotes nothing else of the answer.
func stripeErrorText(se *stripe.Error) string {
	param := ""
	if se.Param != "" {
		param = "param " + answerToken(se.Param)
	}
	return "stripe-go: " + answerText(se.HTTPStatusCode, answerToken(string(se.Type)), answerToken(se.RequestID),
		answerToken(string(se.Code)), answerToken(string(se.DeclineCode)), param) +
		" (its message and objects not quoted: they may hold a client secret or the customer's details)"
}

func (e *stripeAPIError) Is(target error) bool { return target == ErrStripeAPI }
func (e *stripeAPIError) Unwrap() []error {
	switch {
	case e.cause != nil:
		return []error{e.cause}
	case e.answer != nil:
		return []error{e.answer}
	}
	return nil
}

// transientAPIError reports a failed request that a later one may not
// meet (stripeAPIError.transient).
func transientAPIError(err error) bool {
	var e *stripeAPIError
	return errors.As(err, &e) && e.transient()
}
