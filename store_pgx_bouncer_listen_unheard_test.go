package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// listenUnheard and listenHeard are the starts of the lines Run logs when
// no notification reaches its listen connection, and when one does.
const (
	listenUnheard = "idempotency inbox: no notification reached the listen connection"
	listenHeard   = "idempotency inbox: notifications reach the listen connection"
)

// TestPgxBouncerListenUnheardWarns: behind PgBouncer in transaction
// pooling mode, without PollOnly, LISTEN succeeds on a server connection
// that PgBouncer lends to other clients afterwards; every notification
// reaches that server connection while no client is linked to it, and
// PgBouncer drops it ("got packet 'A' from server when not linked", in
// its own log only). The workers of another process found the events
// only by polling, and nothing told the operator why. Run warns once,
// naming PollOnly, and its workers go on polling: every event is applied.
func TestPgxBouncerListenUnheardWarns(t *testing.T) {
	t.Parallel()
	a := newBouncerApp(t, 2, idempotency.PgxConfig{})
	receiver, err := idempotency.NewInbox(a.stores[0], a.hs, idempotency.InboxConfig{Logger: a.logger})
	require.NoError(t, err)
	h, err := receiver.Handler(a.config())
	require.NoError(t, err)
	worker, err := idempotency.NewInbox(a.stores[1], a.hs, idempotency.InboxConfig{PollInterval: 100 * time.Millisecond, Logger: a.logger})
	require.NoError(t, err)
	idempotency.SetListenWait(worker, 500*time.Millisecond)
	defer runInbox(t, worker)()

	const events = 20
	for i := range events {
		a := idempotencytest.Deliver(h, invoicePayload(t, fmt.Sprintf("evt_unheard_%d", i), fmt.Sprintf("in_unheard_%d", i), "acct_unheard"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	require.Eventually(t, func() bool { return a.credits(t, "acct_unheard") == 100*events }, 30*time.Second, 10*time.Millisecond,
		"the other process's workers apply every event, by polling")
	require.Eventually(t, func() bool { return strings.Contains(a.logs.String(), listenUnheard) }, 30*time.Second, 10*time.Millisecond,
		"Run warns that notifications do not arrive:\n%s", a.logs)
	logs := a.logs.String()
	require.Equal(t, 1, strings.Count(logs, listenUnheard), logs)
	require.Contains(t, logs, "PollOnly")
	require.Contains(t, logs, "transaction pooling")
	require.NotContains(t, logs, listenHeard)
	a.requireClean(t)
}

// TestPgxInboxListenHeardNoWarning: on a direct connection the check of
// the listen connection hears its own NOTIFY, and Run never warns about
// PgBouncer, also after the check's wait. The wait is Run's own, 10 s:
// the NOTIFY must reach the listen connection within it, which a loaded
// machine may not do within 100 ms, nor within a second.
func TestPgxInboxListenHeardNoWarning(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	logger, logs := testLogger()
	worker, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{PollInterval: 10 * time.Millisecond, Logger: logger})
	require.NoError(t, err)
	const wait = 10 * time.Second
	idempotency.SetListenWait(worker, wait)
	defer runInbox(t, worker)()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), listenHeard) }, 30*time.Second, time.Millisecond,
		"the listen connection hears the check's NOTIFY:\n%s", logs)
	// The check's wait began before the NOTIFY was heard: it is over
	// within wait.
	require.Never(t, func() bool { return strings.Contains(logs.String(), listenUnheard) }, wait+2*time.Second, 10*time.Millisecond,
		"a warning about PgBouncer on a direct connection:\n%s", logs)
}

// TestInboxListenUnheardPollsMeanwhile: when LISTEN is silently unheard
// (behind PgBouncer in transaction pooling mode), Run's check of the
// listen connection waits 10 seconds after its NOTIFY before it warns, and
// loses nothing meanwhile: the workers poll every PollInterval from the
// start, whatever the check learns, so an event another process stores
// while the check waits is applied at the next poll.
func TestInboxListenUnheardPollsMeanwhile(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	applied := make(chan string, 1)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		applied <- ev.ID
		return nil
	})
	logger, logs := testLogger()
	deaf := idempotency.DeafListenStore{MemoryStore: store, Notified: make(chan struct{}, 1)}
	worker, err := idempotency.NewInbox(deaf, hs, idempotency.InboxConfig{PollInterval: 10 * time.Millisecond, Logger: logger})
	require.NoError(t, err)
	idempotency.SetListenWait(worker, time.Hour) // the check never ends in this test
	receiver, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := receiver.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	defer runInbox(t, worker)()

	recv(t, deaf.Notified, "the check's NOTIFY") // the check now waits
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_unheard_meanwhile", "in_unheard_meanwhile", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	require.Equal(t, "evt_unheard_meanwhile", recv(t, applied, "the event stored by another process"))
	require.NotContains(t, logs.String(), listenUnheard, "the check is still waiting")
}
