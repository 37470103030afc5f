//go:build !linux

package function

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used, in user and system mode
// (per-thread CPU time is Linux's; elsewhere the collector's background
// work is counted too).
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
