// Package stripeapi builds the stripe-go client that the example service
// and idemctl use: an API key checked for its kind, an optional base URL
// for a local stripe-mock or fake, redirects held to the base URL's rules,
// and stripe-go's own logging off. It also checks a connected account's
// id, as Handler.Recover and idemctl recover take it.
package stripeapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"
)

// ErrKey is returned for a key that is neither a secret nor a restricted
// API key, or that has white space or a control character (wrapped). The
// message never contains the key.
var ErrKey = errors.New("STRIPE_SECRET_KEY is not a secret (sk_...) or restricted (rk_...) API key")

// BaseURLError is returned for a base URL that is not http(s), that has a
// path (but /v1), query or fragment of its own, or that is plain http to a
// host other than this machine's for a key that is not a test key. Its
// message quotes the URL without the password of its user info, and not at
// all when it may hold an API key (HoldsKey).
type BaseURLError struct {
	URL     string
	withKey bool // URL may hold an API key
	plain   bool // http, not https, for a key not a test key, to another machine
	ownPath bool // a path but /v1, a query or a fragment
}

// The rules a base URL and a redirect are held to, as their errors say.
const (
	notHTTP     = "is not an http(s) URL"
	unencrypted = "is plain http to another machine, which would send the API key unencrypted"
	unquoted    = "(not quoted: it holds the API key)"
)

func (e *BaseURLError) Error() string {
	what := notHTTP
	if e.ownPath {
		what = "has a path, query or fragment of its own, which stripe-go cannot send to " +
			"(a scheme and a host alone, as https://api.stripe.com or http://localhost:12111)"
	}
	if e.plain {
		what = unencrypted + " (not a test key: use https, or a test key for a local stripe-mock or fake)"
	}
	if e.withKey {
		return what + " " + unquoted
	}
	return fmt.Sprintf("%q %s", Redacted(e.URL), what)
}

// RedirectError is the cause, in the request's *url.Error, of a redirect
// that NewClient's client does not follow. Its message names the rule and
// quotes the location as BaseURLError quotes a base URL.
type RedirectError struct {
	URL     string // the location, resolved against the request's URL (as sent if it does not parse)
	withKey bool   // URL may hold an API key
	why     string // the rule, a phrase after the location
}

func (e *RedirectError) Error() string {
	to := fmt.Sprintf("%q", Redacted(e.URL))
	if e.withKey {
		to = "a location " + unquoted
	}
	return "not following a redirect to " + to + ": it " + e.why +
		"; Stripe's API never redirects: check the base URL"
}

// Redacted is s without the password of its user info, which need not
// parse: what follows the first ':' of the text before the last '@',
// after "//" (or from the start), is masked.
func Redacted(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s[:at], "//"); i >= 0 {
		start = i + 2
	}
	colon := strings.Index(s[start:at], ":")
	if colon < 0 {
		return s
	}
	return s[:start+colon+1] + "xxxxx" + s[at:]
}

// NewClient returns a client for key on base (stripe.APIURL for Stripe
// itself), sending through a copy of hc when it is not nil (stripe-go's
// own default, an 80 s timeout on http.DefaultTransport, when it is).
// Failures come back to the caller, which reports them: stripe-go's own
// log would repeat them.
//
// The client follows a redirect only on the host it was sent to, its name
// spelled the same (any port: http to https changes it), and only to where
// base could point: http(s), plain http to another machine for a test key
// alone. Go forwards the key on a redirect to the same host whatever the
// scheme, so plain http there would send it unencrypted; to another host
// Go drops it, and the request would go on without it to a server never
// named, whose answer would be taken for Stripe's. Nor does it follow one
// to a location that may hold an API key (HoldsKey): Go's error of any
// request sent there quotes its URL. A redirect not followed fails the
// request with a *RedirectError, which stripe-go retries as it does a
// network error; hc's CheckRedirect (Go's limit of 10 redirects without
// one) still applies to the redirects followed.
func NewClient(key, base string, hc *http.Client) (*stripe.Client, error) {
	if !strings.HasPrefix(key, "sk_") && !strings.HasPrefix(key, "rk_") {
		return nil, ErrKey
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		// A line end read with the key: every request would fail on its
		// Authorization header, with nothing saying why.
		return nil, fmt.Errorf("%w: it has white space or a control character (a line end read with it?)", ErrKey)
	}
	u, err := url.Parse(base)
	if !isHTTP(u, err) {
		return nil, &BaseURLError{URL: base, withKey: HoldsKey(base, key)}
	}
	if plainForKey(u, key) {
		return nil, &BaseURLError{URL: base, withKey: HoldsKey(base, key), plain: true}
	}
	if ownPath(base, u) {
		return nil, &BaseURLError{URL: base, withKey: HoldsKey(base, key), ownPath: true}
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:    guarded(key, hc),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if base != stripe.APIURL {
		// A local stripe-mock or fake serves every backend; Stripe's own
		// uploads and meter events hosts are other URLs.
		cfg.URL = stripe.String(base)
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))), nil
}

// isHTTP reports whether u, parsed with err, is an http(s) URL with a host.
func isHTTP(u *url.URL, err error) bool {
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// ownPath reports whether base URL base, parsed as u, has a path, query
// or fragment that stripe-go does not take: it trims one "/" and then one
// "/v1" from a base URL as written and appends each request's path, which
// must then start with /v1 or /v2 (any other request fails, "unknown path
// prefix"), and a query or a fragment would come before that path. A '#'
// is a fragment even with nothing after it, which u does not keep.
func ownPath(base string, u *url.URL) bool {
	p := strings.TrimSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), "/v1")
	return p != "" || u.RawQuery != "" || u.ForceQuery || strings.Contains(base, "#")
}

// plainForKey reports whether u is plain http to another machine for a
// key that is not a test key: not only sk_live_ and rk_live_, as an
// organization key (sk_org_) names no mode and may be a live one.
func plainForKey(u *url.URL, key string) bool {
	return u.Scheme == "http" && KeyMode(key) != "test" && !loopback(u.Hostname())
}

// stripeTimeout is stripe-go's timeout on its default client.
const stripeTimeout = 80 * time.Second

// guarded is a copy of hc (stripe-go's default when nil) whose transport
// refuses the redirects NewClient documents. hc is not changed.
func guarded(key string, hc *http.Client) *http.Client {
	c := &http.Client{Timeout: stripeTimeout}
	if hc != nil {
		*c = *hc
	}
	c.Transport = &redirectGuard{next: c.Transport, key: key}
	return c
}

// redirectGuard is a transport that checks every redirect it receives
// before the client follows it: a CheckRedirect would be too late, as the
// client quotes the location as sent in the error for one it refuses.
type redirectGuard struct {
	next http.RoundTripper // nil: http.DefaultTransport
	key  string
}

func (g *redirectGuard) transport() http.RoundTripper {
	if g.next == nil {
		return http.DefaultTransport
	}
	return g.next
}

func (g *redirectGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.transport().RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return resp, nil
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return resp, nil // the client does not follow it
	}
	if rerr := g.check(req.URL, loc); rerr != nil {
		_, _ = io.CopyN(io.Discard, resp.Body, 2<<10) // the connection may be reused
		_ = resp.Body.Close()
		return nil, rerr
	}
	return resp, nil
}

// check returns the error for a redirect from "from" to loc that the
// client does not follow, or nil.
func (g *redirectGuard) check(from *url.URL, loc string) *RedirectError {
	u, err := from.Parse(loc)
	if err == nil {
		loc = u.String()
	}
	e := &RedirectError{URL: loc, withKey: HoldsKey(loc, g.key)}
	switch {
	case !isHTTP(u, err):
		e.why = notHTTP
	case plainForKey(u, g.key):
		e.why = unencrypted + " (not a test key)"
	case u.Hostname() != from.Hostname():
		// The name as written: Go forwards the key to that name or to a
		// subdomain, which may be another machine, and to no other
		// spelling of it.
		e.why = "is another host, to which the request would go on without the API key"
	case e.withKey:
		// Go quotes the URL a request went to in its error, the key
		// with it, whatever ends the request there: a redirect refused
		// after it, the 10 redirects of its CheckRedirect, the network.
		e.why = "would be quoted, with the key, in the error of any request sent there"
	default:
		return nil
	}
	return e
}

// CloseIdleConnections closes the idle connections of the transport
// wrapped, as http.Client.CloseIdleConnections would.
func (g *redirectGuard) CloseIdleConnections() {
	if c, ok := g.transport().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// HoldsKey reports whether base, a URL or text meant as one, may hold an
// API key: key itself, or any text with a secret or restricted key's
// prefix (another key pasted in), as written or percent-decoded once
// ("%73k_", "sk%5F") or twice ("%2573k_", a URL escaped again on its way),
// as a URL may hold any of its text.
func HoldsKey(base, key string) bool {
	s := base
	for decoded := 0; ; decoded++ {
		if strings.Contains(s, key) || strings.Contains(s, "sk_") || strings.Contains(s, "rk_") {
			return true
		}
		next := percentDecoded(s)
		if decoded == 2 || next == s {
			return false
		}
		s = next
	}
}

// percentDecoded is s with each escape %XX decoded, and a '%' that begins
// none kept as it is: text that does not parse as a URL is decoded too.
func percentDecoded(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// loopback reports whether host names this machine: localhost, or a
// loopback address. Plain http there does not cross a network (a local
// proxy that speaks TLS onward, a stripe-mock).
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// KeyMode is the mode an API key's prefix names: "live" for sk_live_ and
// rk_live_, "test" for sk_test_ and rk_test_, "" for any other text.
func KeyMode(key string) string {
	for _, kind := range [...]string{"sk_", "rk_"} {
		switch rest, ok := strings.CutPrefix(key, kind); {
		case !ok:
		case strings.HasPrefix(rest, "live_"):
			return "live"
		case strings.HasPrefix(rest, "test_"):
			return "test"
		}
	}
	return ""
}

// MaxAccountLen bounds, in bytes, a connected account's id: Stripe's ids
// are at most 255 characters.
const MaxAccountLen = 255

// CheckAccount refuses text that is not a connected account's id
// (acct_...), as a request's Stripe-Account: without the acct_ prefix,
// with white space or a control character (stripe-go trims the header, and
// a line end read from a file would list another account's events), a
// path of accounts (acct_1/acct_2, which only Stripe-Context takes), not
// valid UTF-8, or longer than MaxAccountLen. Its error says which, and
// never quotes the id.
func CheckAccount(id string) error {
	switch {
	case !strings.HasPrefix(id, "acct_"):
		return errors.New("is not a connected account's id (acct_...)")
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return errors.New("has white space or a control character")
	case strings.Contains(id, "/"):
		return errors.New("is a path of accounts (acct_1/acct_2), which Stripe-Account does not take: name the account itself")
	case !utf8.ValidString(id):
		return errors.New("is not valid UTF-8")
	case len(id) > MaxAccountLen:
		return fmt.Errorf("is %d bytes long (at most %d)", len(id), MaxAccountLen)
	}
	return nil
}
