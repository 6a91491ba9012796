package main

import (
	"crypto/subtle"
	"errors"
	"flag"
	"log/slog"
	"net/http"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// dashboardPath is where -dashboard mounts the operator dashboard, and
// dashboardUser the basic-auth user it asks for.
const (
	dashboardPath = "/admin/webhooks/"
	dashboardUser = "admin"
)

// dashboardFlags are -dashboard and -dashboard-password.
type dashboardFlags struct {
	on       *bool
	password *string
}

func addDashboardFlags(fs *flag.FlagSet) dashboardFlags {
	return dashboardFlags{
		on: fs.Bool("dashboard", false, "serve the operator dashboard at "+dashboardPath+
			" behind HTTP basic auth (user "+dashboardUser+", password -dashboard-password), in both modes"),
		password: fs.String("dashboard-password", "",
			"the dashboard's basic-auth password (default env DASHBOARD_PASSWORD); required with -dashboard"),
	}
}

// check refuses -dashboard without a password: the dashboard has no
// authentication of its own.
func (f dashboardFlags) check() error {
	if *f.on && *f.password == "" {
		return errors.New("-dashboard needs -dashboard-password (or DASHBOARD_PASSWORD): the dashboard shows the inbox and redrives events, and must not be open")
	}
	return nil
}

// mount returns srv's routes with, when -dashboard is set, the dashboard of
// srv's inbox at dashboardPath behind basic auth. The inbox exists in both
// modes (its workers send the receipts), so the dashboard does too: in
// synchronous mode it shows the tasks, and the events in the ledger
// (search, event pages). Redrive and forget are on.
func (f dashboardFlags) mount(srv *server, store idempotency.Store, logger *slog.Logger) (http.Handler, error) {
	if !*f.on {
		return srv, nil
	}
	ledger, _ := store.(dashboard.Ledger) // both stores are
	dash, err := dashboard.New(dashboard.Config{
		Inbox: srv.inbox, Ledger: ledger, AllowRedrive: true, AllowForget: true, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(dashboardPath, basicAuth(dashboardUser, *f.password, http.StripPrefix(dashboardPath[:len(dashboardPath)-1], dash)))
	mux.Handle("/", srv)
	logger.Info("dashboard on", "path", dashboardPath, "user", dashboardUser)
	return mux, nil
}

// basicAuth lets through the requests that carry user and password (HTTP
// basic auth), compared in constant time, and answers 401 to the others.
func basicAuth(user, password string, next http.Handler) http.Handler {
	wantUser, wantPassword := []byte(user), []byte(password)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		// Both compared, whatever the first gives: the time says nothing
		// of which one was wrong.
		userOK := subtle.ConstantTimeCompare([]byte(u), wantUser)
		passwordOK := subtle.ConstantTimeCompare([]byte(p), wantPassword)
		if !ok || userOK&passwordOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="webhooks dashboard", charset="UTF-8"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
