package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Names of the processes a ControlPlane runs. They name the log files in the
// data directory (NAME.log) and are the keys LogTail accepts.
const (
	ProcEtcd                  = "etcd"
	ProcKubeAPIServer         = "kube-apiserver"
	ProcKubeControllerManager = "kube-controller-manager"
	ProcCrossplane            = "crossplane"
	ProcFunction              = "function-armada"
	ProcProviderKubernetes    = "provider-kubernetes"
)

// killTimeout bounds how long stop waits for a killed process to be reaped.
const killTimeout = 10 * time.Second

// A process is one child the control plane owns. It can be started again
// after it stopped, with the same command line, so restarts keep its ports.
type process struct {
	name    string
	path    string
	args    []string
	env     []string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	pgids   []int
}

// start starts the process in its own process group, appending its output
// to its log file.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return errors.Errorf("cannot start %s: it is already running", p.name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return errors.Wrapf(err, "cannot open log file of %s", p.name)
	}
	_, _ = fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...) //nolint:noctx // The binaries are configured; the process outlives any context, until stop.
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = processAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return errors.Wrapf(err, "cannot start %s", p.name)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.waitErr = cmd, done, nil
	p.pgids = append(p.pgids, cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// exited returns a non-nil error describing how the process ended if it is
// not running.
func (p *process) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.Errorf("%s was never started", p.name)
	}
	if !isClosed(p.done) {
		return nil
	}
	if p.waitErr != nil {
		return errors.Wrapf(p.waitErr, "%s exited", p.name)
	}
	return errors.Errorf("%s exited", p.name)
}

// stop kills the process group the process leads and waits until the
// process is reaped. It is safe to call on a process that is not running.
func (p *process) stop() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return nil
	}
	// Kill the whole group: some binaries spawn helpers of their own.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	select {
	case <-done:
		return nil
	case <-time.After(killTimeout):
		return errors.Errorf("cannot stop %s: process %d is still running %s after SIGKILL", p.name, cmd.Process.Pid, killTimeout)
	}
}

// state describes the process for failure messages: whether it runs, and
// if so its pid and the kernel's state letter for it (R running, S
// sleeping, T stopped, Z zombie: /proc/<pid>/stat), or how it ended.
func (p *process) state() string {
	if err := p.exited(); err != nil {
		return err.Error()
	}
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Sprintf("running as pid %d (cannot read its state: %v)", pid, err)
	}
	// pid (comm) state ...: comm may hold spaces, so read after the last ')'.
	_, rest, _ := bytes.Cut(b[bytes.LastIndexByte(b, ')')+1:], []byte(" "))
	st, _, _ := bytes.Cut(rest, []byte(" "))
	return fmt.Sprintf("running as pid %d, state %s", pid, st)
}

// groups returns the ids of every process group this process has led.
func (p *process) groups() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.pgids...)
}

// tail returns about the last n lines of the process's log.
func (p *process) tail(n int) string { return testutil.TailFile(p.logPath, n) }

// waitReady polls check every 100ms until it returns nil. It fails as soon as
// the process exits, when ctx is done, or after timeout; the error then
// names what was awaited and holds the last check error and the tail of the
// process's log.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, what string, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("not checked yet")
	for {
		if err := p.exited(); err != nil {
			return errors.Errorf("cannot wait for %s: %v; last lines of %s:\n%s", what, err, p.logPath, p.tail(40))
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		// A check cut short by the deadline says nothing new.
		if ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return errors.Errorf("cannot wait for %s: not ready after %s: %v; last lines of %s:\n%s", what, timeout, last, p.logPath, p.tail(40))
		case <-tick.C:
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// freePorts returns n distinct TCP ports for the components, reserved for
// this process: see package freeport (a port the kernel hands out for port 0
// can be taken by a test running beside this one before the component
// binds it; seen: a provider-kubernetes webhook port "already in use").
func freePorts(ctx context.Context, n int) ([]int, error) {
	p, err := freeport.Reserve(ctx, n)
	return p, errors.Wrap(err, "cannot reserve ports")
}
