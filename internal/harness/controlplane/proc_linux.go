//go:build linux

package controlplane

import "syscall"

// processAttr makes a child lead its own process group, so stop's kill reaches
// everything it spawns, and asks the kernel to SIGKILL it if the process
// that started it dies without calling Stop (for example when a test binary
// is interrupted or times out).
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
