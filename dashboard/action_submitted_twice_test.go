package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestActionSubmittedTwice: a form sent twice (a double click, a resend
// after the back button) acts once, and the second answer shows what the
// first did, not "nothing redriven" or "nothing to forget" for an action
// that was taken: by the id, the list's bulk redrive, and forget.
func TestActionSubmittedTwice(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	twice := func(page, action, want string) {
		t.Helper()
		_, body := f.get(t, page)
		form := pageForm(t, body, action)
		first := f.post(t, action, form, nil)
		require.Equal(t, http.StatusSeeOther, first.StatusCode, page)
		require.Equal(t, want, first.Header.Get("Location"), page)
		second := f.post(t, action, form, nil)
		require.Equal(t, http.StatusSeeOther, second.StatusCode, page)
		require.Equal(t, want, second.Header.Get("Location"), "%s: the second answer is the first's", page)
	}
	twice("event?id=evt_dead_1", "redrive", "./event?id=evt_dead_1&msg=redriven&n=1")
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
	require.Equal(t, 1, strings.Count(f.logs(t), "dashboard: redrove"), "redriven once")

	f.work(t) // dead-lettered again
	twice("events?kind=event&state=dead_letter", "redrive", "./events?kind=event&msg=redriven&n=2&state=dead_letter")
	twice("forget?id=evt_paid_1", "forget", "./event?id=evt_paid_1&msg=forgotten") // its confirmation

	// Another page's form is another submission.
	f.work(t)
	_, body := f.get(t, "event?id=evt_dead_1")
	resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, "./event?id=evt_dead_1&msg=redriven&n=1", resp.Header.Get("Location"))

	// Both at once: whichever comes second waits for the first's answer.
	f.work(t)
	_, body = f.get(t, "event?id=evt_dead_1")
	form := pageForm(t, body, "redrive")
	locs := make(chan string, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, f.srv.URL+mount+"redrive", strings.NewReader(form))
			if err != nil {
				locs <- err.Error()
				return
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			resp, err := noRedirects.Do(req)
			if err != nil {
				locs <- err.Error()
				return
			}
			resp.Body.Close()
			locs <- resp.Header.Get("Location")
		})
	}
	wg.Wait()
	close(locs)
	for loc := range locs {
		require.Equal(t, "./event?id=evt_dead_1&msg=redriven&n=1", loc)
	}
}

// pageForm is the encoded fields of the first form of body that posts to
// action, as the browser sends them.
func pageForm(t *testing.T, body, action string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<form[^>]*action="` + action + `">(.*?)</form>`).FindStringSubmatch(body)
	require.NotNil(t, m, "a %s form", action)
	q := url.Values{}
	for _, in := range regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`).FindAllStringSubmatch(m[1], -1) {
		q.Add(in[1], html.UnescapeString(in[2]))
	}
	return q.Encode()
}
