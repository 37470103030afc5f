package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestProcessStopKillsGroup checks stop kills a child's own children too.
func TestProcessStopKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	p := &process{
		name:    "sh",
		path:    "/bin/sh",
		args:    []string{"-c", "sleep 300 & echo $! > " + pidFile + "; echo started; wait"},
		logPath: filepath.Join(dir, "sh.log"),
	}
	if err := p.start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.waitReady(ctx, 30*time.Second, "sh output", func(context.Context) error {
		// The log's first line is the command line, so look for the
		// output on a line of its own.
		if !strings.HasSuffix(p.tail(5), "\nstarted") {
			return errors.New("not started")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waitReady: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("cannot read grandchild pid: %v", err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("cannot parse grandchild pid: %v", err)
	}
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if p.exited() == nil {
		t.Error("process is still running after stop")
	}
	// The grandchild is reparented to init, which reaps it shortly after
	// the kill.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(grandchild, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived stop", grandchild)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A stopped process can start again, with the same command line.
	if err := p.start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := p.stop(); err != nil {
		t.Fatalf("stop after restart: %v", err)
	}
	if got := len(p.groups()); got != 2 {
		t.Errorf("groups: got %d, want 2", got)
	}
}

// TestProcessWaitReadyReportsExit checks waitReady fails fast, with the log,
// when the process dies.
func TestProcessWaitReadyReportsExit(t *testing.T) {
	dir := t.TempDir()
	p := &process{name: "sh", path: "/bin/sh", args: []string{"-c", "echo boom; exit 3"}, logPath: filepath.Join(dir, "sh.log")}
	if err := p.start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	err := p.waitReady(context.Background(), time.Minute, "sh", func(context.Context) error { return errors.New("never ready") })
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("waitReady: got %v, want an error with the exit status and the log", err)
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := freePorts(t.Context(), 20)
	if err != nil {
		t.Fatalf("freePorts: %v", err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
	}
}

// TestProcessState checks failure messages tell a running process from a
// stopped (SIGSTOP) or exited one.
func TestProcessState(t *testing.T) {
	dir := t.TempDir()
	p := &process{name: "sleep", path: "/bin/sleep", args: []string{"300"}, logPath: filepath.Join(dir, "sleep.log")}
	if got := p.state(); !strings.Contains(got, "never started") {
		t.Errorf("before start: %q, want never started", got)
	}
	if err := p.start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = p.stop() })
	waitState(t, p, "state S")
	if err := p.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, p, "state T")
	if err := p.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, p, "state S")
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p, "sleep exited: signal: killed")
}

// waitState waits until the process's state contains want.
func waitState(t *testing.T, p *process, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := p.state(); !strings.Contains(got, want); got = p.state() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %q, want it to contain %q", p.name, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
