package function

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the calling thread has used, in user and system
// mode; callers lock their goroutine to the thread.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
