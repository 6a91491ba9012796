//go:build !linux

package stripemock

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life to
// its parent's; a test binary that dies leaves stripe-mock running.
func dieWithParent(*exec.Cmd) {}
