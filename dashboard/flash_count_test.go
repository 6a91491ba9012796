package dashboard_test

import (
	"testing"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestFlashIgnoresACountNoRedriveGives: the message after a redrive comes
// from the redirect's query, so a hand-made link could say "Redrove -3
// events" or "Redrove 3x events". A count no redrive gives shows no
// message at all.
func TestFlashIgnoresACountNoRedriveGives(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for _, q := range []string{"n=-3", "n=-1", "n=3x", "n=", "n=99999999999999999999"} {
		_, body := f.get(t, "?msg=redriven&"+q)
		notContains(t, body, `id="flash"`, q)
	}
	_, body := f.get(t, "?msg=redriven-tasks&n=3")
	contains(t, body, "Redrove 3 tasks: they are pending")
	_, body = f.get(t, "?msg=redriven&n=0")
	contains(t, body, "Nothing redriven: no event selected")
}
