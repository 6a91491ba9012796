package idempotency_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The session of a chained commit ends after its COMMIT AND CHAIN
// committed the first event and while the claim of the next one runs: the
// first event is reported processed (it committed), and the next one is
// claimed again on another connection and applied in its first attempt.
func TestPgxInboxChainedSessionEndsBetweenCommitAndClaim(t *testing.T) {
	t.Parallel()
	b, p, leased := chainInbox(t, 2)
	schema := quoteIdent(b.db.Schema)
	_, err := b.db.Pool.Exec(t.Context(), fmt.Sprintf(`
CREATE SEQUENCE %[1]s.kill_once;
CREATE FUNCTION %[1]s.kill_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event_id = 'evt_chain_2' AND nextval('%[2]s.kill_once') = 1 THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER kill_claim BEFORE INSERT ON %[1]s.idempotency_events FOR EACH ROW EXECUTE FUNCTION %[1]s.kill_claim();`,
		schema, b.db.Schema))
	require.NoError(t, err)
	idempotency.ApplyChained(t.Context(), p.inbox, leased...)
	p.mu.Lock()
	results := append([]idempotency.Result(nil), p.results...)
	p.mu.Unlock()
	require.Len(t, results, 2)
	require.NoError(t, results[0].Err, "evt_chain_1 committed")
	require.Equal(t, idempotency.InboxProcessed, results[0].State)
	require.NoError(t, results[1].Err, "evt_chain_2")
	requireChainResults(t, b, p, []int{1, 1}, []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxProcessed})
	require.Equal(t, 1, p.record(t, "evt_chain_2").Attempt, "applied in its first attempt")
	var killed int64
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT last_value FROM %s.kill_once`, schema)).Scan(&killed))
	require.GreaterOrEqual(t, killed, int64(1), "the trigger ended a session")
}
