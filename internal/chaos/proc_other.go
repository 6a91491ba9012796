//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing where the kernel cannot kill a child with its
// parent: a server outlives a chaos run that dies before it stops them.
func dieWithParent(*exec.Cmd) {}
