//go:build unix && !linux

package controlplane

import "syscall"

// processAttr makes a child lead its own process group, so stop's kill reaches
// everything it spawns.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
