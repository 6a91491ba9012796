package dashboard_test

import (
	"crypto/subtle"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// The dashboard has no authentication of its own: mount it behind the
// service's. Here, HTTP basic auth with the password from the environment.
func Example() {
	store := idempotency.NewMemoryStore() // or the service's PgxStore
	inbox, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	if err != nil {
		log.Fatal(err)
	}
	dash, err := dashboard.New(dashboard.Config{
		Inbox:        inbox,
		Ledger:       store,
		AllowRedrive: true, // actions are off unless turned on
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/webhooks/", requireAdmin(http.StripPrefix("/admin/webhooks", dash)))
	// An http.Server that bounds reads, as the webhook route's does:
	// http.ListenAndServe sets no timeout.
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// requireAdmin lets through the requests with the user admin and the
// password DASHBOARD_PASSWORD, and answers 401 to the others.
func requireAdmin(next http.Handler) http.Handler {
	want := []byte(os.Getenv("DASHBOARD_PASSWORD"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		// Both compared in constant time, the second whatever the first
		// gives: the time tells nothing of which one was wrong.
		userOK := subtle.ConstantTimeCompare([]byte(user), []byte("admin"))
		passOK := subtle.ConstantTimeCompare([]byte(pass), want)
		if !ok || len(want) == 0 || userOK&passOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="webhooks", charset="UTF-8"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
