package stripeapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

// The tests' other machines: their transports dial any host under
// example.com at 127.0.0.1, and the test servers' certificate is valid for
// each.
const (
	fakeHost  = "api.example.com"
	otherHost = "other.example.com"
	live      = "sk_live_verysecret0123456789"
)

// keyServer answers every request with an event and records whether one
// came with an Authorization header.
type keyServer struct {
	*httptest.Server
	requests, withKey atomic.Int32
}

func newKeyServer(t *testing.T, tls bool) *keyServer {
	t.Helper()
	s := &keyServer{}
	s.Server = start(t, tls, func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			s.withKey.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"evt_1","object":"event"}`))
	})
	return s
}

// redirecting is a server that answers every request with code to
// where(r).
func redirecting(t *testing.T, tls bool, code int, where func(r *http.Request) string) *httptest.Server {
	t.Helper()
	return start(t, tls, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, where(r), code)
	})
}

func start(t *testing.T, tls bool, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// on is srv's URL with host for its host.
func on(t *testing.T, srv *httptest.Server, host string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	scheme := "http://"
	if srv.TLS != nil {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port)
}

// fakeHostClient is a client that trusts the test servers' certificate and
// dials any host under example.com at 127.0.0.1.
func fakeHostClient(t *testing.T) *http.Client {
	t.Helper()
	srv := start(t, true, http.NotFound)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && strings.HasSuffix(strings.ToLower(host), ".example.com") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// TestRedirectToPlainHTTPKeepsTheKey: an https base whose server redirects
// to plain http on its own host, another machine, does not send a live key
// there: Go's client forwards Authorization to the same host whatever the
// scheme. The request fails with an error that names the rule and quotes
// neither the key nor the location, which holds it. The key was sent in
// clear text.
func TestRedirectToPlainHTTPKeepsTheKey(t *testing.T) {
	t.Parallel()
	plain := newKeyServer(t, false)
	srv := redirecting(t, true, http.StatusFound, func(r *http.Request) string {
		return on(t, plain.Server, fakeHost) + r.URL.Path + "?key=" + live
	})
	c, err := NewClient(live, on(t, srv, fakeHost), fakeHostClient(t))
	require.NoError(t, err)
	_, err = c.V1Events.Retrieve(context.Background(), "evt_1", nil)
	require.Zero(t, plain.withKey.Load(), "the key went over plain http")
	require.Zero(t, plain.requests.Load())
	_, ok := errors.AsType[*RedirectError](err)
	require.True(t, ok, "%v", err)
	require.ErrorContains(t, err, "not following a redirect to a location (not quoted: it holds the API key): "+
		"it is plain http to another machine, which would send the API key unencrypted")
	require.NotContains(t, err.Error(), "verysecret")
}

// TestRedirectOnStripesDefaultClient: without a client of the caller's,
// NewClient's is stripe-go's default (its timeout, Go's default transport)
// and refuses the same redirects: a live key on a loopback base redirected
// to plain http on another machine fails before any connection there. It
// was followed, with the key.
func TestRedirectOnStripesDefaultClient(t *testing.T) {
	t.Parallel()
	b, ok := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{}).(*stripe.BackendImplementation)
	require.True(t, ok)
	require.Equal(t, b.HTTPClient.Timeout, guarded(live, nil).Timeout)
	require.Nil(t, b.HTTPClient.Transport, "stripe-go's default is Go's default transport")

	srv := redirecting(t, false, http.StatusTemporaryRedirect, func(r *http.Request) string {
		return "http://stripe-api.invalid" + r.URL.Path
	})
	c, err := NewClient(live, srv.URL, nil)
	require.NoError(t, err)
	_, err = c.V1Events.Retrieve(context.Background(), "evt_1", nil)
	require.ErrorContains(t, err, `not following a redirect to "http://stripe-api.invalid/v1/events/evt_1": `+
		"it is plain http to another machine, which would send the API key unencrypted (not a test key)")
}

// TestRedirectRules: a redirect is followed, with the key, to the same
// host on a location the base could be (plain http there for a test key or
// to this machine; https); one to another host, which Go would send on
// without the key, or to a location not http(s), is refused; every code
// Go follows is checked. The refusal is a *RedirectError naming the rule
// and the location, without its password, and the location is not asked.
func TestRedirectRules(t *testing.T) {
	t.Parallel()
	hc := fakeHostClient(t)
	plain, secure := newKeyServer(t, false), newKeyServer(t, true)
	for _, tc := range []struct {
		name, key string
		tls       bool   // the base's scheme
		to        string // the location
		target    *keyServer
		why       string // "": followed
	}{
		{"test key to plain http", "sk_test_123", true, on(t, plain.Server, fakeHost), plain, ""},
		{"live key to this machine's plain http", live, true, plain.URL, plain, ""},
		{"http to https", live, false, secure.URL, secure, ""},
		{"live key to plain http", live, true, on(t, plain.Server, fakeHost), plain,
			"it is plain http to another machine, which would send the API key unencrypted (not a test key)"},
		{"restricted key to plain http", "rk_live_123", true, on(t, plain.Server, fakeHost), plain,
			"it is plain http to another machine"},
		{"https to another host", live, true, on(t, secure.Server, otherHost), secure,
			"it is another host, to which the request would go on without the API key"},
		{"test key to another host", "sk_test_123", true, on(t, plain.Server, otherHost), plain, "it is another host"},
		{"this machine by another name", live, true, on(t, secure.Server, "localhost"), secure, "it is another host"},
		{"its name in capitals", live, true, on(t, secure.Server, strings.ToUpper(fakeHost)), secure, "it is another host"},
		{"a subdomain", live, true, on(t, secure.Server, "eu."+fakeHost), secure, "it is another host"},
		{"not http(s)", live, true, "ftp://" + fakeHost + "/v1/events", nil, "it is not an http(s) URL"},
		{"no host", live, true, "https:///v1/events", nil, "it is not an http(s) URL"},
		{"a password", live, true, "ftp://ops:hunter2@" + fakeHost, nil, `"ftp://ops:xxxxx@api.example.com/v1/events"`},
	} {
		host := fakeHost
		if tc.to == plain.URL || tc.to == secure.URL {
			host = "127.0.0.1"
		}
		for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			t.Run(tc.name+"/"+http.StatusText(code), func(t *testing.T) {
				srv := redirecting(t, tc.tls, code, func(*http.Request) string { return tc.to + "/v1/events" })
				var asked, withKey int32
				if tc.target != nil {
					asked, withKey = tc.target.requests.Load(), tc.target.withKey.Load()
				}
				req, err := http.NewRequest(http.MethodGet, on(t, srv, host)+"/v1/events", nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+tc.key)
				resp, err := guarded(tc.key, hc).Do(req)
				if tc.why == "" {
					require.NoError(t, err)
					require.NoError(t, resp.Body.Close())
					require.Equal(t, http.StatusOK, resp.StatusCode)
					require.Equal(t, withKey+1, tc.target.withKey.Load(), "followed with the key")
					return
				}
				re, ok := errors.AsType[*RedirectError](err)
				require.True(t, ok, "%v", err)
				require.Contains(t, re.Error(), tc.why)
				require.Contains(t, re.Error(), "Stripe's API never redirects: check the base URL")
				require.NotContains(t, err.Error(), "hunter2")
				if tc.target != nil {
					require.Equal(t, asked, tc.target.requests.Load(), "the location was not asked")
				}
			})
		}
	}
}

// recordingTransport is a caller's transport that counts the calls to its
// CloseIdleConnections.
type recordingTransport struct {
	http.RoundTripper
	closed atomic.Int32
}

func (r *recordingTransport) CloseIdleConnections() { r.closed.Add(1) }

// TestRedirectGuardKeepsTheCallersClient: a caller's client is copied,
// not changed: its timeout, transport (idle connections closed through
// the copy) and CheckRedirect go on in the copy, which still stops at what
// CheckRedirect refuses.
func TestRedirectGuardKeepsTheCallersClient(t *testing.T) {
	t.Parallel()
	target := newKeyServer(t, false)
	srv := redirecting(t, false, http.StatusFound, func(r *http.Request) string {
		if r.URL.Path == "/2" {
			return target.URL
		}
		return "/2"
	})
	tr := &recordingTransport{RoundTripper: http.DefaultTransport}
	stop := errors.New("stopped by the caller")
	var checked atomic.Int32
	hc := &http.Client{Transport: tr, Timeout: 7 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if checked.Add(1) == 2 {
			return stop
		}
		return nil
	}}
	c := guarded(live, hc)
	require.Same(t, tr, hc.Transport, "the caller's client is not changed")
	require.Equal(t, hc.Timeout, c.Timeout)

	_, err := c.Get(srv.URL + "/1")
	require.ErrorIs(t, err, stop)
	require.EqualValues(t, 2, checked.Load())
	require.Zero(t, target.requests.Load())

	c.CloseIdleConnections()
	require.EqualValues(t, 1, tr.closed.Load())
}

// TestRedirectToALocationHoldingTheKeyRefused: a redirect on the same
// host to a location that holds the API key (as written, or
// percent-encoded once or twice) is not followed, the location not asked: Go's error of
// any request after it, refused by a later redirect or stopped after 10,
// quotes the URL it went to, and so the key. It was followed, and the
// error quoted the key.
func TestRedirectToALocationHoldingTheKeyRefused(t *testing.T) {
	t.Parallel()
	hc := fakeHostClient(t)
	for name, loc := range map[string]string{
		"in the query, then another host":  "/next?key=" + live,
		"percent-encoded, then endlessly":  "/loop/%73k_live_verysecret0123456789",
		"encoded twice, then another host": "/next?key=%2573k_live_verysecret0123456789",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var after atomic.Int32 // requests after the first
			srv := start(t, true, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v1/events":
					http.Redirect(w, r, loc, http.StatusFound)
				case r.URL.Path == "/next":
					after.Add(1)
					http.Redirect(w, r, "https://"+otherHost+"/v1/events", http.StatusFound)
				default:
					after.Add(1)
					http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
				}
			})
			req, err := http.NewRequest(http.MethodGet, on(t, srv, fakeHost)+"/v1/events", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+live)
			_, err = guarded(live, hc).Do(req)
			require.NotContains(t, err.Error(), "verysecret")
			_, ok := errors.AsType[*RedirectError](err)
			require.True(t, ok, "%v", err)
			require.ErrorContains(t, err, "not following a redirect to a location (not quoted: it holds the API key): "+
				"it would be quoted, with the key, in the error of any request sent there")
			require.Zero(t, after.Load(), "the location was not asked")
		})
	}
}
