//go:build !unix

package pgtest

import (
	"os"
	"os/exec"
)

// runAs is never needed off Unix: there is no root (os.Geteuid returns -1).
func runAs(cmd *exec.Cmd, u *osUser) {}

// startWatchdog is not available off Unix; a test binary that dies without
// running Main's cleanup leaves its cluster behind.
func startWatchdog(c *Cluster) (*os.File, <-chan struct{}, error) { return nil, nil, nil }
