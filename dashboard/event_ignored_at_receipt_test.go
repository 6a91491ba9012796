package dashboard_test

import (
	"html"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestIgnoredAtReceiptPageSaysWhy: an event a Handler with
// Config.RecordIgnored stored ignored, having no handler for its type, is
// stored with no last error and no attempt, on both stores; its page says
// why it is ignored in place of the last error, as idemctl show does. It
// showed state ignored and "—". The lists (of events, a search's records
// of an object) say so in their last error cell in the words idemctl
// list uses, and where to look for more; the cell was empty, as for an
// event with no error. Its attempts are the count alone, as of every
// record no worker attempts again: not out of MaxAttempts, with attempts
// left before a dead letter.
func TestIgnoredAtReceiptPageSaysWhy(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, open(t), dashboard.Config{})
			deliverIgnored(t, f, "evt_ignr_1")
			rec, ok, err := f.inbox.Lookup(t.Context(), "evt_ignr_1")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxIgnored, rec.State)
			require.Empty(t, rec.LastError, "what the store holds: no reason")
			require.Zero(t, rec.Attempt)

			_, body := f.get(t, "event?id=evt_ignr_1")
			contains(t, body, `id="state">ignored<`)
			contains(t, body, `<dd id="attempts">0</dd>`)
			contains(t, body, `id="last-error">`+html.EscapeString("ignored at receipt: no handler for its type in the process "+
				"that received it (Config.RecordIgnored stores it)")+`<`)

			for _, path := range []string{"events?state=ignored", "search?q=in_evt_ignr_1"} {
				_, body := f.get(t, path)
				contains(t, body, `data-id="evt_ignr_1"`)
				contains(t, body, `<td class="err"><div class="clamp">ignored at receipt: no handler for its type; see the event</div></td>`)
			}
		})
	}
}
