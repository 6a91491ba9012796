package idempotency_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// liveEvent is snapshotEvent's invoice.paid event with livemode set to
// live.
func liveEvent(t *testing.T, id string, live bool, created int64) []byte {
	t.Helper()
	return eventWith(t, snapshotEvent(t, id, "invoice.paid", "in_"+id, created), "livemode", live)
}

// TestConfigModeRefusesUnknown: a Mode other than ModeLive, ModeTest or
// empty is refused by NewHandler and Inbox.Handler, naming the field.
func TestConfigModeRefusesUnknown(t *testing.T) {
	t.Parallel()
	store, hs := idempotency.NewMemoryStore(), idempotency.NewHandlers()
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	for _, m := range []idempotency.Mode{"Live", "livemode", " test"} {
		cfg := idempotency.Config{Secrets: []string{testSecret}, Mode: m}
		_, err := idempotency.NewHandler(store, hs, cfg)
		require.ErrorContains(t, err, "Config.Mode "+`"`+string(m)+`"`)
		_, err = in.Handler(cfg)
		require.ErrorContains(t, err, "Config.Mode")
	}
	for _, m := range []idempotency.Mode{"", idempotency.ModeLive, idempotency.ModeTest} {
		_, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Mode: m})
		require.NoError(t, err, m)
	}
}

// TestModeRefusesDeliveryOfOtherMode: with Config.Mode, a delivery of the
// other mode is answered 400 invalid_event with ErrModeMismatch, logged at
// Warn without its payload, and nothing is stored, by a synchronous
// Handler and an Inbox's; one of the endpoint's mode is applied (or
// queued) as before, and without Mode either mode is.
func TestModeRefusesDeliveryOfOtherMode(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		now := time.Now().Unix()
		test, live := liveEvent(t, "evt_mode_test", false, now), liveEvent(t, "evt_mode_live", true, now)
		log, buf := testLogger()
		var results []idempotency.Result
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: log, Mode: idempotency.ModeLive,
			OnResult: func(r idempotency.Result) { results = append(results, r) },
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, test, testSecret)
		require.Equal(t, http.StatusBadRequest, a.Status)
		require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
		require.ErrorIs(t, results[0].Err, idempotency.ErrModeMismatch)
		require.EqualError(t, results[0].Err, "idempotency: event of another mode than Config.Mode: event evt_mode_test is a test-mode event (livemode false), Config.Mode is live")
		require.Contains(t, buf.String(), `"level":"WARN"`)
		require.Contains(t, buf.String(), "evt_mode_test")
		require.NotContains(t, buf.String(), "amount_paid", "no payload in the log")
		_, found, err := app.store.(ledger).LookupEvent(t.Context(), "evt_mode_test")
		require.NoError(t, err)
		require.False(t, found)
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, live, testSecret).Outcome)
		app.requireAppliedOnce(t, []string{"evt_mode_live"})

		in, err := idempotency.NewInbox(app.store, app.hs, idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Mode: idempotency.ModeTest})
		require.NoError(t, err)
		other := liveEvent(t, "evt_mode_live_2", true, now)
		a = idempotencytest.Deliver(ih, other, testSecret)
		require.Equal(t, http.StatusBadRequest, a.Status)
		require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
		_, found, err = in.Lookup(t.Context(), "evt_mode_live_2")
		require.NoError(t, err)
		require.False(t, found, "not in the inbox")
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, test, testSecret).Outcome)

		unchecked, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(unchecked, other, testSecret).Outcome)
	})
}

// TestModeRefusesThinEventOfOtherMode: with Config.Mode, a thin
// notification of the other mode is answered 400 without a fetch, and one
// whose notification says nothing of its mode is fetched and refused for
// the fetched event's livemode (fetched with a key whose prefix names no
// mode: one of the other mode is refused by NewHandler); nothing is
// stored. One of the endpoint's mode is applied.
func TestModeRefusesThinEventOfOtherMode(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		thinEvents(app)
		f, notification, _ := newThinFake("evt_thin_mode")
		f.key = "sk_fake_0123456789" // no mode in its prefix, as a proxy's placeholder
		var results []idempotency.Result
		cfg := idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t), Mode: idempotency.ModeLive,
			OnResult: func(r idempotency.Result) { results = append(results, r) },
		}
		h, err := idempotency.NewHandler(app.store, app.hs, cfg)
		require.NoError(t, err)

		a := idempotencytest.Deliver(h, notification, testSecret)
		require.Equal(t, http.StatusBadRequest, a.Status)
		require.JSONEq(t, `{"error":"invalid_event"}`, a.Body)
		require.ErrorIs(t, results[0].Err, idempotency.ErrModeMismatch)
		require.Empty(t, f.calls(), "refused without a fetch")

		silent := []byte(strings.Replace(string(notification), `"livemode":false,`, "", 1))
		require.NotEqual(t, notification, silent)
		a = idempotencytest.Deliver(h, silent, testSecret)
		require.Equal(t, http.StatusBadRequest, a.Status)
		require.ErrorIs(t, results[1].Err, idempotency.ErrModeMismatch)
		require.Len(t, f.calls(), 1, "the fetched event says the mode")
		_, found, err := app.store.(ledger).LookupEvent(t.Context(), "evt_thin_mode")
		require.NoError(t, err)
		require.False(t, found)
		require.Empty(t, app.appliedCounts(t))

		cfg.Mode = idempotency.ModeTest
		testKey, _, _ := newThinFake("evt_thin_mode") // a test-mode key
		cfg.StripeClient = testKey.serve(t)
		h, err = idempotency.NewHandler(app.store, app.hs, cfg)
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome)
		app.requireAppliedOnce(t, []string{"evt_thin_mode"})
	})
}

// TestRecoverRefusesEventsOfOtherMode: with Config.Mode, Recover refuses a
// client whose API key's prefix names the other mode before any request,
// without quoting the key; with a key whose prefix does not say, the
// first listed event of the other mode stops the run with
// ErrModeMismatch, nothing of its page applied and the checkpoint not past
// it. With the mode matching, the events are applied as before.
func TestRecoverRefusesEventsOfOtherMode(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		now := time.Now()
		f := newFakeStripe()
		created := now.Add(-time.Hour).Unix()
		for i, live := range []bool{true, true, false, true} {
			f.add(liveEvent(t, "evt_mode_"+string(rune('a'+i)), live, created+int64(i)))
		}
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Mode: idempotency.ModeLive})
		require.NoError(t, err)
		opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "mode", PageSize: 1, RequestsPerSecond: 100}

		rep, err := h.Recover(t.Context(), f.serve(t), opts) // fakeStripeKey, sk_test_
		require.ErrorIs(t, err, idempotency.ErrModeMismatch)
		require.ErrorContains(t, err, "Recover's client has a test-mode API key")
		require.NotContains(t, err.Error(), fakeStripeKey)
		require.Zero(t, rep.Requests)
		require.Empty(t, f.calls())

		f.key = "sk_org_fake_0123456789" // a prefix that names no mode
		rep, err = h.Recover(t.Context(), f.serve(t), opts)
		require.ErrorIs(t, err, idempotency.ErrModeMismatch)
		require.ErrorContains(t, err, "listing events: event of another mode than Config.Mode: event evt_mode_c is a test-mode event (livemode false), Config.Mode is live; nothing of its page was handled")
		require.Equal(t, "evt_mode_b", rep.LastEventID)
		app.requireAppliedOnce(t, []string{"evt_mode_a", "evt_mode_b"})
		rep, err = h.Recover(t.Context(), f.serve(t), opts)
		require.ErrorIs(t, err, idempotency.ErrModeMismatch)
		require.Equal(t, "evt_mode_b", rep.LastEventID, "the checkpoint stays before it")
		app.requireAppliedOnce(t, []string{"evt_mode_a", "evt_mode_b"})

		f.key = "rk_live_fake_0123456789"
		unchecked, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		opts.Checkpoint = ""
		rep, err = unchecked.Recover(t.Context(), f.serve(t), opts)
		require.NoError(t, err)
		require.Equal(t, 2, rep.Processed, "without Mode, either mode is applied")
		app.requireAppliedOnce(t, []string{"evt_mode_a", "evt_mode_b", "evt_mode_c", "evt_mode_d"})
	})
}

// TestRecoverModeMatching: with Config.Mode matching the key and the
// events, Recover applies them as before.
func TestRecoverModeMatching(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	now := time.Now()
	f := newFakeStripe()
	for i := range 3 {
		f.add(liveEvent(t, "evt_match_"+string(rune('a'+i)), false, now.Add(-time.Hour).Unix()+int64(i)))
	}
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Mode: idempotency.ModeTest})
	require.NoError(t, err)
	rep, err := h.Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Processed)
	app.requireAppliedOnce(t, []string{"evt_match_a", "evt_match_b", "evt_match_c"})
}

// TestConfigModeRefusesStripeClientOfOtherMode: with Config.Mode, a
// Config.StripeClient whose API key's prefix names the other mode is
// refused by NewHandler and Inbox.Handler with ErrModeMismatch, naming the
// field and never quoting the key: its fetches of thin events and of
// current objects would find none of the endpoint's, and every thin event
// would fail until Stripe gave up. A key of the endpoint's mode, one whose
// prefix names no mode, and any key without Mode are taken.
func TestConfigModeRefusesStripeClientOfOtherMode(t *testing.T) {
	t.Parallel()
	store, hs := idempotency.NewMemoryStore(), idempotency.NewHandlers()
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	for _, c := range []struct {
		key  string
		mode idempotency.Mode
	}{{"sk_test_secret4242", idempotency.ModeLive}, {"rk_live_secret4242", idempotency.ModeTest}} {
		cfg := idempotency.Config{Secrets: []string{testSecret}, Mode: c.mode, StripeClient: stripe.NewClient(c.key)}
		_, err := idempotency.NewHandler(store, hs, cfg)
		require.ErrorIs(t, err, idempotency.ErrModeMismatch, c.key)
		require.ErrorContains(t, err, "Config.StripeClient has a "+string(stripeModeOf(c.key))+"-mode API key")
		require.NotContains(t, err.Error(), "secret4242", "the key is not quoted")
		_, err = in.Handler(cfg)
		require.ErrorIs(t, err, idempotency.ErrModeMismatch, c.key)
	}
	for _, c := range []struct {
		key  string
		mode idempotency.Mode
	}{
		{"sk_live_x", idempotency.ModeLive}, {"rk_test_x", idempotency.ModeTest},
		{"ek_test_x", idempotency.ModeLive}, {"sk_test_x", ""},
	} {
		_, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Mode: c.mode, StripeClient: stripe.NewClient(c.key)})
		require.NoError(t, err, c.key)
	}
}

// stripeModeOf is the mode a secret or restricted key's prefix names.
func stripeModeOf(key string) idempotency.Mode {
	if strings.Contains(key, "_live_") {
		return idempotency.ModeLive
	}
	return idempotency.ModeTest
}
