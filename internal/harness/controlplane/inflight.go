package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PauseFunction stops function-armada with SIGSTOP: it keeps its socket
// open, so Crossplane's next call is sent and waits, unread, until
// ResumeFunction or until the function is killed. Tests use it to hold a
// reconcile in flight.
func (c *ControlPlane) PauseFunction() error {
	return c.procs[ProcFunction].signal(syscall.SIGSTOP)
}

// ResumeFunction continues function-armada after PauseFunction.
func (c *ControlPlane) ResumeFunction() error {
	return c.procs[ProcFunction].signal(syscall.SIGCONT)
}

// Restore undoes what fault injection may have left behind when a test
// failed half-way: it resumes a paused function-armada and starts
// function-armada and Crossplane core again if they are not running, so
// the tests after it find a working control plane.
// A control plane started without either (SkipFunction, KubernetesOnly)
// is left as it is.
func (c *ControlPlane) Restore(ctx context.Context) error {
	if fn, ok := c.procs[ProcFunction]; ok {
		if fn.exited() == nil {
			if err := fn.signal(syscall.SIGCONT); err != nil {
				return err
			}
		} else if err := c.StartFunction(ctx); err != nil {
			return err
		}
	}
	if xp, ok := c.procs[ProcCrossplane]; ok && xp.exited() != nil {
		return c.StartCrossplane(ctx)
	}
	return nil
}

// FunctionUnread returns how many bytes Crossplane has sent on its
// connections to function-armada that the function has not read: more
// than zero while the function is paused means a call is in flight. It
// reads the receive queues of the function's established connections
// from /proc/net/tcp.
func (c *ControlPlane) FunctionUnread() (int, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, errors.Wrap(err, "cannot read TCP sockets")
	}
	defer f.Close() //nolint:errcheck // Read only.
	// Local address 127.0.0.1:<port> as the kernel writes it.
	local := fmt.Sprintf("0100007F:%04X", c.ports.function)
	unread := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue ...
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || fields[1] != local || fields[3] != "01" {
			continue
		}
		_, rx, _ := strings.Cut(fields[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		if err != nil {
			return 0, errors.Wrapf(err, "cannot parse receive queue %q", fields[4])
		}
		unread += int(n)
	}
	return unread, errors.Wrap(s.Err(), "cannot read TCP sockets")
}

// signal sends sig to the process group the process leads.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return errors.Errorf("cannot signal %s: it is not running", p.name)
	}
	return errors.Wrapf(syscall.Kill(-cmd.Process.Pid, sig), "cannot send %s to %s", sig, p.name)
}
