//go:build unix

package pgtest

import (
	"os"
	"os/exec"
	"syscall"
)

// runAs makes cmd run as u (only possible when we are root).
func runAs(cmd *exec.Cmd, u *osUser) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid}
}

// watchdogScript waits until its stdin reaches EOF, which happens when the
// test binary exits for whatever reason (also a panic, a -timeout, Ctrl-C or
// SIGKILL, when Main cannot clean up), then shuts the cluster down and
// removes its directory. $0 is pg_ctl, $1 the cluster's directory.
const watchdogScript = `read _ignored
"$0" stop -D "$1/data" -m immediate -w -s >/dev/null 2>&1
rm -rf "$1"`

// startWatchdog starts the watchdog process for c, as the user that owns the
// cluster and in its own process group (so Ctrl-C in the terminal does not
// kill it too). It returns the write end of its stdin (closing it, or
// exiting, makes the watchdog clean up) and a channel closed when the
// watchdog has exited.
func startWatchdog(c *Cluster) (*os.File, <-chan struct{}, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, c.pgCtl, c.dir)
	cmd.Dir = "/"
	cmd.Env = childEnv()
	cmd.Stdin = r // an *os.File: handed to the child as is, no copying goroutine
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.cred != nil {
		runAs(cmd, c.cred)
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return w, done, nil
}
