package pgtest

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

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

// TestBouncerExitNoticedWhileAPingWaits: PgBouncer exits at start (its
// port taken) while a ping of waitReady's waits on the listener that
// holds the port, which answers nothing. waitReady returns at once that it
// exited, rather than when the ping times out: 5 s of each start on a
// port another listener held.
func TestBouncerExitNoticedWhileAPingWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	defer func(d time.Duration) { bouncerPingTimeout = d }(bouncerPingTimeout)
	bouncerPingTimeout = time.Hour // only PgBouncer's exit ends the ping
	done := make(chan struct{})
	b := &Bouncer{bin: "pgbouncer", port: ln.Addr().(*net.TCPAddr).Port, done: done}
	returned := make(chan error, 1)
	go func() { returned <- b.waitReady() }()
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(time.Minute):
		t.Fatal("waitReady's ping never connected")
	}
	close(done) // PgBouncer exits
	select {
	case err := <-returned:
		if err == nil || !strings.Contains(err.Error(), "exited at start") {
			t.Fatalf("waitReady = %v, want that PgBouncer exited at start", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("waitReady still waits on its ping a minute after PgBouncer exited")
	}
}
