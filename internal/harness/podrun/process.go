package podrun

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// A Process is a running binary whose output goes to a log file.
type Process struct {
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Start runs bin with args and exactly env (nothing is inherited from the
// caller) in dir, in a process group of its own. Stop kills it and anything
// it spawns; so does the caller's death.
func Start(bin, dir string, args, env []string, logPath string) (*Process, error) {
	logf, err := os.Create(logPath) //nolint:gosec // A file in the test's directory.
	if err != nil {
		return nil, errors.Wrap(err, "cannot create log file")
	}
	// Not the test's context: the process may outlive a subtest, and is
	// killed by Stop.
	cmd := exec.CommandContext(context.Background(), bin, args...) //nolint:gosec // Runs Armada's binaries.
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = testenv.ProcessGroupAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, errors.Wrapf(err, "cannot start %s", bin)
	}
	p := &Process{logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Stop kills the process group and waits for the process to exit.
func (p *Process) Stop() {
	testenv.KillProcessGroup(p.cmd.Process)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// Exited reports whether the process has exited, and its exit code.
func (p *Process) Exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code; ok is false on timeout.
func (p *Process) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// LogPath is the file the process's output goes to.
func (p *Process) LogPath() string { return p.logPath }

// Pid is the process's id, which leads its process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Log returns the process's output so far.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(cannot read log: " + err.Error() + ")"
	}
	return string(b)
}

// Tail returns the last n lines of the process's output.
func (p *Process) Tail(n int) string { return testutil.Tail(p.Log(), n) }

// Until polls the log every 100ms until cond holds, the process exits or
// timeout passes, and reports whether cond held. cond is checked once more
// after an exit, so output written just before exiting counts.
func (p *Process) Until(timeout time.Duration, cond func(log string) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		exited, _ := p.Exited()
		if cond(p.Log()) {
			return true
		}
		if exited || time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Listening reports whether something accepts TCP connections on port
// within timeout. A component may log its last marker a moment before it
// binds a port.
func Listening(port int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		cancel()
		if err == nil {
			_ = c.Close()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Healthy polls GET http://127.0.0.1:port/health until it answers 2xx or
// timeout passes; it returns the last status or error seen. Lookout answers
// 200, binoculars 204.
func Healthy(port int, timeout time.Duration) (bool, string) {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	deadline := time.Now().Add(timeout)
	last := "no attempt"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			_ = resp.Body.Close()
			last = resp.Status + ": " + strings.TrimSpace(body.String())
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				cancel()
				return true, last
			}
		} else {
			last = err.Error()
		}
		cancel()
		time.Sleep(500 * time.Millisecond)
	}
	return false, last
}
