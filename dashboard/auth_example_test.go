package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRequireAdminExample: the basic auth that README and the package doc
// show is the one Example compiles, and it lets through the user admin
// with the password, and no one else (nor anyone while the password is
// unset).
func TestRequireAdminExample(t *testing.T) {
	funcOf := func(path, linePrefix string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var out []string
		in := false
		for l := range strings.SplitSeq(string(b), "\n") {
			l, ok := strings.CutPrefix(l, linePrefix)
			switch {
			case !ok:
				in = false
			case strings.HasPrefix(l, "func requireAdmin("):
				in = true
			}
			if in {
				out = append(out, l)
				in = l != "}"
			}
		}
		require.NotEmpty(t, out, path)
		return strings.Join(out, "\n")
	}
	example := funcOf("example_test.go", "")
	require.Equal(t, example, funcOf("../README.md", ""), "README")
	require.Equal(t, example, funcOf("dashboard.go", "//\t"), "package doc")

	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	status := func(h http.Handler, user, password string) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	t.Setenv("DASHBOARD_PASSWORD", "")
	require.Equal(t, http.StatusUnauthorized, status(requireAdmin(ok), "admin", ""), "no password set: no one")
	t.Setenv("DASHBOARD_PASSWORD", "s3cret")
	h := requireAdmin(ok)
	for _, c := range []struct{ user, password string }{{"", ""}, {"admin", "wrong"}, {"root", "s3cret"}, {"admin", ""}, {"admi", "s3cret"}} {
		require.Equal(t, http.StatusUnauthorized, status(h, c.user, c.password), c)
	}
	require.Equal(t, http.StatusTeapot, status(h, "admin", "s3cret"))
}
