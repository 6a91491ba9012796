// Package stripeapi builds the stripe-go client that the example service
// and idemctl use: an API key checked for its kind, an optional base URL
// for a local stripe-mock or fake, and stripe-go's own logging off. It
// also checks a connected account's id, as Handler.Recover and idemctl
// recover take it.
package stripeapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"
)

// ErrKey is returned for a key that is neither a secret nor a restricted
// API key, or that has white space or a control character (wrapped). The
// message never contains the key.
var ErrKey = errors.New("STRIPE_SECRET_KEY is not a secret (sk_...) or restricted (rk_...) API key")

// BaseURLError is returned for a base URL that is not http(s), or that is
// plain http to a host other than this machine's for a key that is not a
// test key. Its message quotes the URL without the password of its user
// info, and not at all when it may hold an API key (HoldsKey).
type BaseURLError struct {
	URL     string
	withKey bool // URL may hold an API key
	plain   bool // http, not https, for a key not a test key, to another machine
}

func (e *BaseURLError) Error() string {
	what := "is not an http(s) URL"
	if e.plain {
		what = "is plain http to another machine, which would send the API key unencrypted " +
			"(not a test key: use https, or a test key for a local stripe-mock or fake)"
	}
	if e.withKey {
		return what + " (not quoted: it holds the API key)"
	}
	return fmt.Sprintf("%q %s", Redacted(e.URL), what)
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
// itself), sending through hc when it is not nil. Failures come back to
// the caller, which reports them: stripe-go's own log would repeat them.
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
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &BaseURLError{URL: base, withKey: HoldsKey(base, key)}
	}
	if u.Scheme == "http" && KeyMode(key) != "test" && !loopback(u.Hostname()) {
		// Not only sk_live_ and rk_live_: an organization key (sk_org_)
		// names no mode, and may be a live one.
		return nil, &BaseURLError{URL: base, withKey: HoldsKey(base, key), plain: true}
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:    hc,
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if base != stripe.APIURL {
		// A local stripe-mock or fake serves every backend; Stripe's own
		// uploads and meter events hosts are other URLs.
		cfg.URL = stripe.String(base)
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))), nil
}

// HoldsKey reports whether base, a URL or text meant as one, may hold an
// API key: key itself, or any text with a secret or restricted key's
// prefix (another key pasted in), as written or percent-decoded ("%73k_",
// "sk%5F"), as a URL may hold any of its text.
func HoldsKey(base, key string) bool {
	for _, s := range [...]string{base, percentDecoded(base)} {
		if strings.Contains(s, key) || strings.Contains(s, "sk_") || strings.Contains(s, "rk_") {
			return true
		}
	}
	return false
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
