package conformance

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

// process is a running Armada binary whose output goes to a log file.
type process struct {
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// startProcess runs bin with args and exactly env (nothing is inherited
// from the test) in dir. The process and anything it spawns are killed when
// the test ends, and with the test binary if it dies.
func startProcess(t *testing.T, bin, dir string, args, env []string, logPath string) (*process, error) {
	t.Helper()
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
	p := &process{logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	t.Cleanup(p.Stop)
	return p, nil
}

// Stop kills the process group and waits for the process to exit.
func (p *process) Stop() {
	testenv.KillProcessGroup(p.cmd.Process)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// Exited reports whether the process has exited, and its exit code.
func (p *process) Exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code; ok is false on timeout.
func (p *process) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// Log returns the process's output so far.
func (p *process) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(cannot read log: " + err.Error() + ")"
	}
	return string(b)
}

// Tail returns the last n lines of the process's output.
func (p *process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Until polls the log every 100ms until cond holds, the process exits or
// timeout passes, and reports whether cond held. cond is checked once more
// after an exit, so output written just before exiting counts.
func (p *process) Until(timeout time.Duration, cond func(log string) bool) bool {
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

// listening reports whether something accepts TCP connections on port
// within timeout. A component may log its last marker a moment before it
// binds a port.
func listening(port int, timeout time.Duration) bool {
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

// healthy polls GET http://127.0.0.1:port/health until it answers 2xx or
// timeout passes; it returns the last status or error seen. Lookout answers
// 200, binoculars 204.
func healthy(port int, timeout time.Duration) (bool, string) {
	return get2xx(http.DefaultClient, "http", port, "/health", timeout)
}

// get2xx polls GET <scheme>://127.0.0.1:port<path> with client until it
// answers 2xx or timeout passes; it returns the last status or error seen.
func get2xx(client *http.Client, scheme string, port int, path string, timeout time.Duration) (bool, string) {
	url := scheme + "://127.0.0.1:" + strconv.Itoa(port) + path
	deadline := time.Now().Add(timeout)
	last := "no attempt"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		resp, err := client.Do(req)
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
