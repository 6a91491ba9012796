package pgtest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// envPortTakenChild makes TestClusterPortTakenChild run, in the child test
// binary TestClusterPortTakenBeforeStart starts.
const envPortTakenChild = "PGTEST_TEST_PORT_TAKEN_CHILD"

// TestClusterPortTakenBeforeStart: the cluster's port is picked (a free
// one, its listener closed) a second or more before the server binds it,
// after initdb. Another process may take it meanwhile: another test
// binary of the same go test ./... run starting its own cluster, or any
// program's listener. The cluster must start on another port rather than
// make every database test of the binary skip (or fail under CI=true).
func TestClusterPortTakenBeforeStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster in a child test binary")
	}
	t.Parallel()
	runChildTest(t, "TestClusterPortTakenChild", envPortTakenChild, "the cluster did not start when its port was taken before the server bound it")
}

// runChildTest runs the test named name in a child test binary, with env
// set to 1 and CI=true, on a cluster of its own, and fails t with what
// unless it passed.
func runChildTest(t *testing.T, name, env, what string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvDatabaseURL+"=") || strings.HasPrefix(kv, "CI=")
	}), env+"=1", "CI=true")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "--- PASS: "+name) || err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
}

// takenPort holds a loopback port until the test ends, and returns it with
// a port picker whose first pick is that port, the later ones free.
func takenPort(t *testing.T) (int, func() (int, error)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	taken := ln.Addr().(*net.TCPAddr).Port
	picks := 0
	return taken, func() (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return freeLoopbackPort()
	}
}

// TestClusterPortTakenChild hands the cluster a port that another listener
// holds, as if another process had taken it since it was picked.
func TestClusterPortTakenChild(t *testing.T) {
	if os.Getenv(envPortTakenChild) != "1" {
		t.Skip("run by TestClusterPortTakenBeforeStart")
	}
	var taken int
	taken, clusterPort = takenPort(t)
	db := New(t)
	var one int
	if err := db.Pool.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	if srv.cluster.port == taken {
		t.Fatalf("the cluster claims port %d, which another listener holds", taken)
	}
}
