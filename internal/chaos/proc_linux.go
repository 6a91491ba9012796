package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd with SIGKILL should chaos die
// before it stops it (SIGKILL, a crash): no server outlives a run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
