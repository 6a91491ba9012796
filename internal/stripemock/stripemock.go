// Package stripemock starts stripe-mock, Stripe's official mock of its API
// (github.com/stripe/stripe-mock), for contract tests: it answers every
// endpoint of Stripe's OpenAPI spec with fixture data and refuses requests
// the spec does not allow, so it checks that a real stripe-go client's
// requests are well-formed and its answers decode. It is stateless and
// ignores filters and cursors: it checks wiring, not behaviour.
//
// The binary is looked up on PATH, then in $GOBIN and $(go env
// GOPATH)/bin, where
//
//	go install github.com/stripe/stripe-mock@v0.203.0
//
// puts it (.ci/run does). Without it the tests that need it are skipped
// with a message saying so, and fail when CI=true, like the PostgreSQL
// tests (internal/pgtest).
package stripemock

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/ci"
)

// Version is the stripe-mock release the tests are written against.
const Version = "v0.203.0"

const install = "go install github.com/stripe/stripe-mock@" + Version

// startTimeout bounds stripe-mock's start: it loads Stripe's whole spec.
const startTimeout = 60 * time.Second

// Start starts stripe-mock on free loopback ports and returns the base URL
// of its HTTP listener (it serves HTTPS too, unused here); it is stopped
// when the test ends. Without stripe-mock it skips the test, or fails it
// when CI=true.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := find()
	if err != nil {
		if ci.On() {
			t.Fatalf("stripemock: stripe-mock not found and CI=true: %v; install it with %s", err, install)
		}
		t.Skipf("stripemock: SKIPPED, stripe-mock not found (%v); install it with %s (CI=true fails instead)", err, install)
	}
	// An empty port makes the system choose a free one; stripe-mock says
	// which. HTTPS gets one too, so that parallel instances never share
	// its default port.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	dieWithParent(cmd)
	out, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("stripemock: starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = w.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	addr := make(chan string, 1)
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			line := s.Text()
			mu.Lock()
			log.WriteString(line + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	select {
	case a := <-addr:
		return "http://" + a
	case <-exited:
		t.Fatalf("stripemock: %s exited before listening:\n%s", bin, output())
	case <-time.After(startTimeout):
		t.Fatalf("stripemock: %s did not listen within %s:\n%s", bin, startTimeout, output())
	}
	panic("unreachable")
}

// listening is the line stripe-mock prints once its HTTP listener is up.
var listening = regexp.MustCompile(`Listening for HTTP at address: (\S+)$`)

// find returns the path of the stripe-mock binary.
func find() (string, error) {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	var dirs []string
	if env, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		gobin, gopath, _ := strings.Cut(string(env), "\n")
		if gobin = strings.TrimSpace(gobin); gobin != "" {
			dirs = append(dirs, gobin)
		}
		for _, dir := range filepath.SplitList(strings.TrimSpace(gopath)) {
			dirs = append(dirs, filepath.Join(dir, "bin"))
		}
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, "stripe-mock")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
