package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// proc is one examples/server process of the run, started again with the
// same flags (and so the same address) after each kill.
type proc struct {
	name    string // receiver-1, worker-2, ...
	bin     string
	args    []string
	addr    string // host:port it listens on
	logPath string // its stderr, appended to across restarts

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited
}

// childEnv is the servers' environment: ours without what would change
// what examples/server does beside its flags. libpq's PG* variables stay:
// chaos's own connections read them too.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, name := range []string{"DATABASE_URL=", "STRIPE_", "DASHBOARD_PASSWORD="} {
			if strings.HasPrefix(kv, name) {
				return true
			}
		}
		return false
	})
}

// start starts the process.
func (p *proc) start() error {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = log, log // files: no copying goroutine outlives a kill
	cmd.Env = childEnv()
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// current returns the running command and its exit channel.
func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// kill kills the process with SIGKILL and returns once it has exited.
func (p *proc) kill() {
	cmd, exited := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// restart kills the process and starts it again.
func (p *proc) restart() error {
	p.kill()
	return p.start()
}

// stop asks the process to stop (SIGINT, as examples/server stops
// gracefully), and kills it after grace.
func (p *proc) stop(grace time.Duration) {
	cmd, exited := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(grace):
		p.kill()
	}
}

// waitHealthy waits until the process answers GET /healthz 200, it
// exits, or ctx is done.
func (p *proc) waitHealthy(ctx context.Context, client *http.Client) error {
	_, exited := p.current()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w (its log: %s)", p.name, context.Cause(ctx), p.logPath)
		case <-exited:
			return fmt.Errorf("%s exited at start (its log: %s)", p.name, p.logPath)
		case <-tick.C:
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// stopAll stops every process at once, each within grace.
func stopAll(procs []*proc, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.stop(grace) })
	}
	wg.Wait()
}

var errNoGo = errors.New("the go command is needed to build examples/server: run chaos with go run ./internal/chaos")

// buildServer builds examples/server into dir and returns the binary's
// path. The module is the one the working directory is in.
func buildServer(ctx context.Context, dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", errNoGo
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if ctx.Err() != nil {
		return "", errInterrupted
	}
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", errors.New("not within the module: run chaos from the repository (go run ./internal/chaos)")
	}
	bin := dir + "/server"
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./examples/server")
	build.Dir = strings.TrimSuffix(gomod, "/go.mod")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/server: %v\n%s", err, out)
	}
	return bin, nil
}
