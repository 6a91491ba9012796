package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// envBouncerPortTakenChild makes TestBouncerPortTakenChild run, in the
// child test binary TestBouncerPortTakenBeforeStart starts.
const envBouncerPortTakenChild = "PGTEST_TEST_BOUNCER_PORT_TAKEN_CHILD"

// TestBouncerPortTakenBeforeStart: PgBouncer's port is picked (a free one,
// its listener closed) before PgBouncer binds it. Another process may take
// it meanwhile: in CI the kernel gave it to an outgoing connection of a
// test binary beside, PgBouncer logged "cannot listen on ...: Address
// already in use" and exited, and every PgBouncer test of the binary
// failed. PgBouncer must start on another port instead, as the cluster
// does (TestClusterPortTakenBeforeStart).
func TestBouncerPortTakenBeforeStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and PgBouncer in a child test binary")
	}
	t.Parallel()
	runChildTest(t, "TestBouncerPortTakenChild", envBouncerPortTakenChild, "PgBouncer did not start when its port was taken before it bound it")
}

// TestBouncerPortTakenChild hands PgBouncer a port that another listener
// holds, as if another process had taken it since it was picked.
func TestBouncerPortTakenChild(t *testing.T) {
	if os.Getenv(envBouncerPortTakenChild) != "1" {
		t.Skip("run by TestBouncerPortTakenBeforeStart")
	}
	var taken int
	taken, bouncerPort = takenPort(t)
	b := PgBouncer(t)
	if b.port == taken {
		t.Fatalf("PgBouncer claims port %d, which another listener holds", taken)
	}
	conn, err := pgx.Connect(context.Background(), b.url("postgres", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}
