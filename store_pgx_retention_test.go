package idempotency_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxPruneLeavesWorkToRunningPrune: a prune that starts while another
// one's batch is in flight (on any replica: the lock is the database's)
// deletes nothing and says so; once that batch ends, a prune runs.
func TestPgxPruneLeavesWorkToRunningPrune(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	_, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_old", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	later := idempotency.Retention{Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }}

	// Another replica's batch: the same lock, held in a transaction.
	other, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = other.Rollback(context.Background()) }()
	var got bool
	require.NoError(t, other.QueryRow(t.Context(), `SELECT pg_try_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`, b.db.Schema).Scan(&got))
	require.True(t, got)

	// A first batch that waited for the lock would wait for the test's
	// rollback below: bounded, it fails here instead of hanging the suite.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rep, err := b.store.Prune(ctx, later)
	require.ErrorIs(t, err, idempotency.ErrPruneRunning, "the first batch does not wait for the running prune")
	require.Zero(t, rep.Total())
	_, found, err := b.store.LookupEvent(t.Context(), "evt_old")
	require.NoError(t, err)
	require.True(t, found, "nothing deleted")

	require.NoError(t, other.Rollback(t.Context()))
	rep, err = b.store.Prune(t.Context(), later)
	require.NoError(t, err)
	require.Equal(t, idempotency.PruneReport{EventIDs: 1}, rep)
}

// TestPgxPrunePassesOverLockedRows: a claim row that a transaction in
// flight holds is passed over, not waited for.
func TestPgxPrunePassesOverLockedRows(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	for i := range 3 {
		_, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_" + strconv.Itoa(i), EventType: "invoice.paid"}, nil)
		require.NoError(t, err)
	}
	holder, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(t.Context(), `SELECT 1 FROM idempotency_events WHERE event_id = 'evt_1' FOR UPDATE`)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rep, err := b.store.Prune(ctx, idempotency.Retention{Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }})
	require.NoError(t, err, "a prune waiting on the held row would run into the deadline")
	require.Equal(t, 2, rep.EventIDs)
}

// TestPgxForgetOnOtherReplicaHonouredWithinTTL: a replica that remembers
// an event as claimed answers it duplicate until PgxConfig.RecentClaimsTTL
// has passed since it met it; then it applies it again, once.
func TestPgxForgetOnOtherReplicaHonouredWithinTTL(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	const ttl = 300 * time.Millisecond
	replica, err := idempotency.NewPgxStore(b.db.Pool, idempotency.PgxConfig{Schema: b.db.Schema, RecentClaimsTTL: ttl})
	require.NoError(t, err)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[map[string]any]) error {
		return b.add(ctx, tx, "applied", 1)
	})
	h, err := idempotency.NewHandler(replica, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	body := []byte(`{"id":"evt_forget","object":"event","type":"invoice.paid","created":1756742400,"data":{"object":{"id":"in_1","object":"invoice"}}}`)
	deliver := func() idempotency.Outcome {
		a := idempotencytest.Deliver(h, body, testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		return a.Outcome
	}
	// The replica meets the claim during the first delivery, after
	// before: the time since before, read once a delivery has returned,
	// is more than the age of its memory when that delivery looked.
	before := time.Now()
	require.Equal(t, idempotency.OutcomeProcessed, deliver())
	require.Equal(t, idempotency.OutcomeDuplicate, deliver())

	found, err := b.store.Forget(t.Context(), "evt_forget") // on the other replica
	require.NoError(t, err)
	require.True(t, found)
	again := deliver()
	if took := time.Since(before); took < ttl {
		require.Equal(t, idempotency.OutcomeDuplicate, again, "the replica still remembers the claim")
	} else {
		t.Logf("the machine took %s of the %s memory: the check that the replica still remembers is not made", took, ttl)
	}
	if again != idempotency.OutcomeProcessed {
		require.Eventually(t, func() bool { return deliver() == idempotency.OutcomeProcessed }, 10*time.Second, 20*time.Millisecond,
			"the replica applies the forgotten event once its memory of it has expired")
	}
	require.Equal(t, idempotency.OutcomeDuplicate, deliver())
	require.Equal(t, 2, b.get(t, "applied"))
}

// TestPruneEvery: the loop prunes at once, stops with its context, and
// refuses a bad interval or Retention before pruning.
func TestPruneEvery(t *testing.T) {
	t.Parallel()
	s := idempotency.NewMemoryStore()
	_, err := s.Run(t.Context(), idempotency.Claim{EventID: "evt_old", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)
	r := idempotency.Retention{Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }}

	// A refusal returns at once; a loop that ran instead would run until
	// its context is done: bounded, it fails here instead of hanging.
	refused, cancelRefused := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelRefused()
	require.ErrorContains(t, idempotency.PruneEvery(refused, s, r, time.Second, nil), "under a minute")
	require.ErrorContains(t, idempotency.PruneEvery(refused, s, idempotency.Retention{EventIDs: time.Hour}, time.Hour, nil), "Retention.EventIDs")
	_, found, err := s.LookupEvent(t.Context(), "evt_old")
	require.NoError(t, err)
	require.True(t, found, "nothing pruned by a refused loop")

	ctx, cancel := context.WithCancel(t.Context())
	pruned := make(chan struct{})
	r.OnBatch = func(idempotency.PruneReport) { close(pruned) }
	done := make(chan error, 1)
	go func() { done <- idempotency.PruneEvery(ctx, s, r, time.Hour, discardLogger()) }()
	recv(t, pruned, "a batch pruned")
	cancel()
	require.ErrorIs(t, recv(t, done, "PruneEvery returned"), context.Canceled)
	_, found, err = s.LookupEvent(t.Context(), "evt_old")
	require.NoError(t, err)
	require.False(t, found)
}

// TestPgxForgottenEventAppliedByWorkerThatRemembersIt: a worker whose
// process remembers an event as claimed still asks the database, so an
// event forgotten by another process and stored again is applied, not
// marked processed from memory.
func TestPgxForgottenEventAppliedByWorkerThatRemembersIt(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{RecentClaimsTTL: time.Hour})
	other, err := idempotency.NewPgxStore(b.db.Pool, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[map[string]any]) error {
		return b.add(ctx, tx, "applied", 1)
	})
	body := []byte(`{"id":"evt_fw","object":"event","type":"invoice.paid","created":1756742400,"data":{"object":{"id":"in_fw","object":"invoice"}}}`)

	// This process applies it synchronously and remembers it.
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, body, testSecret).Outcome)

	// Another process forgets it and stores a resend in the inbox.
	found, err := other.Forget(t.Context(), "evt_fw")
	require.NoError(t, err)
	require.True(t, found)
	otherInbox, err := idempotency.NewInbox(other, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	ingest, err := otherInbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ingest, body, testSecret).Outcome)

	// This process's worker applies it.
	inbox, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	n, err := inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 2, b.get(t, "applied"), "applied again after Forget")
	rec, ok, err := b.store.LookupEvent(t.Context(), "evt_fw")
	require.NoError(t, err)
	require.True(t, ok, "and claimed again")
	require.Equal(t, idempotency.OutcomeProcessed, rec.Outcome)
}
