package main

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel send the daemon SIGTERM should this command die without
// stopping it (the suite kills a client that outlives its timeout).
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
