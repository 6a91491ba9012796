package stripemock

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill stripe-mock when the test binary dies
// before its cleanup runs (a panic, a -timeout).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
