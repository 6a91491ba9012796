package pgtest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestBouncerPortTakenChild$", "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvDatabaseURL+"=") || strings.HasPrefix(kv, "CI=")
	}), envBouncerPortTakenChild+"=1", "CI=true")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "--- PASS: TestBouncerPortTakenChild") || err != nil {
		t.Fatalf("PgBouncer did not start when its port was taken before it bound it: %v\n%s", err, out)
	}
}

// TestBouncerPortTakenChild hands PgBouncer a port that another listener
// holds, as if another process had taken it since it was picked.
func TestBouncerPortTakenChild(t *testing.T) {
	if os.Getenv(envBouncerPortTakenChild) != "1" {
		t.Skip("run by TestBouncerPortTakenBeforeStart")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	picks := 0
	bouncerPort = func() (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return freeLoopbackPort()
	}
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
