package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// envClusterDirChild makes TestMainRemovesClusterChild run, in the child
// test binary TestMainRemovesTheCluster starts.
const envClusterDirChild = "PGTEST_TEST_CLUSTER_DIR_CHILD"

// TestMainRemovesTheCluster: Main stops the throwaway cluster and removes
// its directory before it returns, not only the watchdog once the test
// binary has exited.
func TestMainRemovesTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster in a child test binary")
	}
	t.Parallel()
	dir, out, err := runClusterChild("1")
	if err != nil || dir == "" {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the cluster's directory %s is still there when the test binary has exited: %v", dir, err)
	}
}

// runClusterChild runs TestMainRemovesClusterChild in a child test binary
// with envClusterDirChild set to mode, on a throwaway cluster of its own,
// and returns the cluster's directory it printed ("" if none).
func runClusterChild(mode string) (dir string, out []byte, err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainRemovesClusterChild$", "-test.count=1", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvDatabaseURL+"=") || strings.HasPrefix(kv, "CI=")
	}), envClusterDirChild+"="+mode, "CI=true")
	out, err = cmd.CombinedOutput()
	if m := regexp.MustCompile(`CLUSTERDIR=(\S+)`).FindSubmatch(out); m != nil {
		dir = string(m[1])
	}
	return dir, out, err
}

// TestWatchdogRemovesTheClusterOfADeadBinary: a test binary that dies
// before Main can clean up (here os.Exit in a test, as a panic, -timeout
// or SIGKILL would end it) leaves its cluster to the watchdog, which
// stops it and removes its directory.
func TestWatchdogRemovesTheClusterOfADeadBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster in a child test binary")
	}
	t.Parallel()
	dir, out, err := runClusterChild("die")
	if err == nil || dir == "" {
		t.Fatalf("child: want it dead after printing the cluster's directory: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(dir)
		if os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's directory %s is still there 30 s after its test binary died: %v", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMainRemovesClusterChild starts the cluster and says where it is;
// with envClusterDirChild=die, it then exits at once, running no cleanup.
func TestMainRemovesClusterChild(t *testing.T) {
	mode := os.Getenv(envClusterDirChild)
	if mode == "" {
		t.Skip("run by TestMainRemovesTheCluster and TestWatchdogRemovesTheClusterOfADeadBinary")
	}
	if _, err := New(t).Pool.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CLUSTERDIR=%s\n", srv.cluster.dir)
	if mode == "die" {
		os.Exit(3)
	}
}
