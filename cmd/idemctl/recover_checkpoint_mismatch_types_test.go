package main

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// TestRecoverCheckpointMismatchOfSeveralTypesOrEvery: a -checkpoint of
// several -types continued with an earlier -since is refused for its
// -since, not for its types, and one a service started with
// Handler.Recover without Types is said to have been started with every
// type. (No test failed when the refusal read the checkpoint's types as
// one, or named no type for one of every type.)
func TestRecoverCheckpointMismatchOfSeveralTypesOrEvery(t *testing.T) {
	t.Parallel()
	s, _, srv, env, start, since, earlier := newCheckpointFixture(t, "cmt")

	args := []string{"recover", "-types", "invoice.paid,charge.failed", "-api-base", srv.URL, "-checkpoint", "cmt"}
	r := idemctl(t, s.db, env, append(args, "-since", since)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = idemctl(t, s.db, env, append(args, "-since", earlier)...)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `-checkpoint "cmt" was started with -since `+since+`, not the earlier `+earlier+`: run it with a -since`)

	// A checkpoint of the service's own, of every type.
	client, err := stripeapi.NewClient(stripeKey, srv.URL, nil)
	require.NoError(t, err)
	h, err := s.inbox.Handler(idempotency.Config{Secrets: []string{"whsec_cmt"}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: start, Checkpoint: "cmt_every"})
	require.NoError(t, err)
	r = idemctl(t, s.db, env, "recover", "-types", "invoice.paid", "-api-base", srv.URL, "-checkpoint", "cmt_every", "-since", since)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `-checkpoint "cmt_every" was started with every type, not -types invoice.paid:`)
}
