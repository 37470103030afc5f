package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Names of the node's processes; their logs are NAME.log in the node's
// directory.
const (
	ProcContainerd = "containerd"
	ProcKubelet    = "kubelet"
)

// A process is one daemon the node runs, in its own process group, killed
// by the kernel if the process that started it dies.
type process struct {
	name, logPath string
	cmd           *exec.Cmd
	done          chan struct{}
	waitErr       error
}

// startProcess starts path with args, appending its output to logPath.
func startProcess(name, path, logPath string, args, env []string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // The node's own log file.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot open the log file of %s", name)
	}
	_, _ = fmt.Fprintf(f, "=== %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...) //nolint:noctx,gosec // A daemon from the tool cache that outlives any context, until stop.
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, errors.Wrapf(err, "cannot start %s", name)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns how the process ended, nil while it runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		if p.waitErr != nil {
			return errors.Wrapf(p.waitErr, "%s exited", p.name)
		}
		return errors.Errorf("%s exited", p.name)
	default:
		return nil
	}
}

// stopGrace is how long stop waits after SIGTERM.
const stopGrace = 10 * time.Second

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace,
// and waits until the process is reaped.
func (p *process) stop() error {
	if p == nil || p.exited() != nil {
		return nil //nolint:nilerr // A process that already ended is stopped.
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return errors.Errorf("cannot stop %s: process %d still runs 10s after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// tail returns about the last n lines of the process's log.
func (p *process) tail(n int) string { return testutil.TailFile(p.logPath, n) }

// waitFor polls check every 200ms until it returns nil; it fails when the
// process exits, ctx ends or stepTimeout passes, with the last check's
// error and the tail of the process's log.
func (p *process) waitFor(ctx context.Context, what string, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
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
		if ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return errors.Errorf("cannot wait for %s: not ready after %s: %v; last lines of %s:\n%s", what, stepTimeout, last, p.logPath, p.tail(40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
