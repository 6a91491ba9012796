package stripeapi

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRefusedRedirectReleasesItsConnection: the answer of a redirect the
// guard refuses is read and closed: a short one (Go's own redirect page)
// leaves its connection to the next request, which opens none; one too
// long to read through has its connection closed, not held open for good.
// (No test failed when the answer was closed without being read, and a
// connection was opened for each request, nor when it was read and not
// closed, and the connection stayed open.)
func TestRefusedRedirectReleasesItsConnection(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{"short": "", "long": strings.Repeat("x", 16<<10)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opened atomic.Int32
			closed := make(chan struct{}, 2)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if body == "" {
					http.Redirect(w, r, "https://"+otherHost+"/v1/events", http.StatusFound)
					return
				}
				w.Header().Set("Location", "https://"+otherHost+"/v1/events")
				w.WriteHeader(http.StatusFound)
				_, _ = w.Write([]byte(body))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					opened.Add(1)
				case http.StateClosed, http.StateHijacked:
					select {
					case closed <- struct{}{}:
					default:
					}
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := guarded(live, &http.Client{Transport: tr})
			for range 2 {
				_, err := c.Get(srv.URL + "/v1/events")
				_, ok := errors.AsType[*RedirectError](err)
				require.True(t, ok, "%v", err)
				if body != "" {
					select {
					case <-closed:
					case <-time.After(10 * time.Second):
						t.Fatal("the connection of a long answer refused was not closed")
					}
				}
			}
			if body == "" {
				require.EqualValues(t, 1, opened.Load(), "connections opened")
			}
		})
	}
}
