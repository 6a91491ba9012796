package main

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestRecoverNamesNoUnlistedTypeBeforeARequest: a run stopped before its
// first request (its checkpoint could not be read) names no type as
// listed nothing for, on stderr or in -json, whose unlisted_types is []:
// the Events API was not asked. (No test failed when such a run named
// each of -types "no event listed", or when -json's unlisted_types was
// null.)
func TestRecoverNamesNoUnlistedTypeBeforeARequest(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	api := &eventsAPI{types: []string{"invoice.paid"}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	table := pgx.Identifier{s.db.Schema, "idempotency_recovery"}.Sanitize()
	_, err := s.db.Pool.Exec(t.Context(), `ALTER TABLE `+table+` RENAME TO "idempotency_recovery_gone"`)
	require.NoError(t, err)
	since := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)

	r := idemctl(t, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey}, "recover", "-since", since,
		"-types", "invoice.paid,invoice.payed", "-api-base", srv.URL, "-checkpoint", "gone", "-json")
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "loading recovery checkpoint")
	require.NotContains(t, r.stderr, "no event listed")
	require.Empty(t, api.queries, "nothing requested")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, []any{}, doc["unlisted_types"])
	require.Zero(t, doc["requests"])
}
