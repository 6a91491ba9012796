package dashboard_test

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestTaskKeyWithEdgeSpacesHasItsPage: a task key may begin or end with a
// space (a name as a customer typed it); the list links to the task's
// page, and that page, the one a redrive of the task leads back to, shows
// the task instead of "not found"; so does a search by its whole id.
func TestTaskKeyWithEdgeSpacesHasItsPage(t *testing.T) {
	t.Parallel()
	st := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	welcome := idempotency.NewTask(hs, "welcome", func(context.Context, idempotency.TaskRun[string]) error {
		return idempotency.Permanent(errors.New("mailer refused the address"))
	})
	in, err := idempotency.NewInbox(st, hs, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = st.Run(t.Context(), idempotency.Claim{EventID: "evt_signup"}, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := welcome.Enqueue(ctx, tx, "Jenny Rosen ", "jenny.rosen@example.com")
		return err
	})
	require.NoError(t, err)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	id := welcome.ID("Jenny Rosen ")
	rec, ok, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)

	dash, err := dashboard.New(dashboard.Config{Inbox: in, Ledger: st, AllowRedrive: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	serve := func(method, target, form string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(form))
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		dash.ServeHTTP(w, req)
		return w
	}

	list := serve(http.MethodGet, "/events?kind=task", "")
	require.Equal(t, http.StatusOK, list.Code)
	link := regexp.MustCompile(`href="(event\?id=[^"]*)"`).FindStringSubmatch(list.Body.String())
	require.NotNil(t, link, "the list links to the task")
	page := serve(http.MethodGet, "/"+html.UnescapeString(link[1]), "")
	require.Equal(t, http.StatusOK, page.Code, "the task's page, from the list's link")
	contains(t, page.Body.String(), `id="state">dead_letter<`)
	for _, q := range []string{id, " " + id} { // pasted with a space before it too
		found := serve(http.MethodGet, "/search?q="+url.QueryEscape(q), "")
		require.Equal(t, http.StatusOK, found.Code)
		contains(t, found.Body.String(), `<span class="state state-dead_letter">dead_letter</span> in the inbox`)
	}

	redrive := serve(http.MethodPost, "/redrive", "id="+strings.ReplaceAll(id, " ", "+"))
	require.Equal(t, http.StatusSeeOther, redrive.Code)
	loc := redrive.Header().Get("Location")
	page = serve(http.MethodGet, "/"+strings.TrimPrefix(loc, "./"), "")
	require.Equal(t, http.StatusOK, page.Code, "the page a redrive leads back to: %s", loc)
	contains(t, page.Body.String(), `id="state">pending<`)
	contains(t, page.Body.String(), "Redrove 1 task: it is pending")
}
