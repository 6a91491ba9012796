package dashboard_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// New refuses a Ledger that is a nil pointer in a non-nil interface (a
// *PgxStore variable never assigned): it took it for a ledger, and every
// event page and search then panicked on it, the connection dropped
// without an answer.
func TestNewRefusesTypedNilLedger(t *testing.T) {
	t.Parallel()
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	for _, ledger := range []dashboard.Ledger{(*idempotency.MemoryStore)(nil), (*idempotency.PgxStore)(nil)} {
		d, err := dashboard.New(dashboard.Config{Inbox: in, Ledger: ledger})
		if err != nil {
			require.ErrorContains(t, err, "Config.Ledger", "%T", ledger)
			continue
		}
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			d.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/search?q=evt_1", nil))
		}()
		t.Errorf("New accepted a nil %T as Ledger; the search page then panicked: %s", ledger, fmt.Sprint(panicked))
	}
}
