//go:build unix && !linux

package builder

import (
	"os/exec"
	"syscall"
)

// dieWithParent: only Linux has a parent-death signal; elsewhere a CLI
// outlives a provider killed outright (see proc_linux.go).
func dieWithParent(*syscall.SysProcAttr) {}

// runChild runs cmd; with no death signal, which thread starts it does not
// matter.
func runChild(cmd *exec.Cmd) error { return cmd.Run() }
