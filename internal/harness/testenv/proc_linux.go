//go:build linux

package testenv

import (
	"os"
	"syscall"
)

// ProcessGroupAttr returns process attributes for a child that test code
// owns: the child leads its own process group, so KillProcessGroup reaches
// everything it spawns, and the kernel kills it with SIGKILL if the test
// binary dies without running its cleanups (for example on a test timeout).
func ProcessGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// KillProcessGroup sends SIGKILL to the process group p leads. It is safe
// to call on a process that has already exited.
func KillProcessGroup(p *os.Process) {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
