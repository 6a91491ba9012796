package stripemock

import (
	"net/http"
	"testing"
)

// TestStart: two instances start side by side on ports of their own, and
// answer as Stripe's API does, refusing a request without a key.
func TestStart(t *testing.T) {
	t.Parallel()
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("two instances on one address %s", a)
	}
	for _, url := range []string{a, b} {
		for key, want := range map[string]int{"sk_test_123": http.StatusOK, "": http.StatusUnauthorized} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/v1/events?limit=1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("%s with key %q: %d, want %d", url, key, res.StatusCode, want)
			}
		}
	}
}

func TestListeningLine(t *testing.T) {
	m := listening.FindStringSubmatch("Listening for HTTP at address: 127.0.0.1:41234")
	if m == nil || m[1] != "127.0.0.1:41234" {
		t.Fatalf("%q", m)
	}
	if listening.MatchString("Listening for HTTPS at address: 127.0.0.1:41235") {
		t.Fatal("the HTTPS line taken for the HTTP one")
	}
}
