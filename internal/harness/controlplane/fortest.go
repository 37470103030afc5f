package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds StartForTest's bring-up.
const startTimeout = 15 * time.Minute

// StartForTest starts a control plane for a test, failing the test if it
// cannot start, and registers a cleanup that stops it. If the test failed,
// the cleanup first logs the tail of every process's log. Progress goes to
// t.Logf unless o.Logf is set.
//
// Until the cleanup runs, SIGINT or SIGTERM stops the control plane (and
// removes its temporary data directory) before the signal takes its usual
// effect. If the test binary dies any other way, Linux kills the processes
// (they are started with a parent-death signal).
func StartForTest(t testing.TB, o Options) *ControlPlane {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("cannot start control plane: %v", err)
	}
	unwatch := stopOnSignal(c)
	t.Cleanup(func() {
		unwatch()
		if t.Failed() {
			c.Keep()
			t.Logf("control plane logs (all kept in %s):\n%s", c.dir, c.LogTails(30))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("cannot stop control plane: %v", err)
		}
	})
	return c
}

// stopOnSignal stops c when the process receives SIGINT or SIGTERM, then
// re-raises the signal with its default action. The returned function
// stops watching.
func stopOnSignal(c *ControlPlane) func() {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			// Not t.Logf: the test may be over by the time this runs.
			logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
			logf("controlplane: %v: stopping the control plane", sig)
			if err := c.stop(logf); err != nil {
				logf("controlplane: %v", err)
			}
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
