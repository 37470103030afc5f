// Package jobflow runs jobs through an Armada this project composed, on a
// local control plane with kube-scheduler and KWOK Nodes
// (controlplane.Options.JobFlow): private PostgreSQL, Redis and Pulsar
// reached at the names a claim gives them, package podrun running every
// composed pod as Armada's own binaries at the composed release,
// provider-armada's controllers creating the claim's queues, armadactl
// submitting and watching jobs, and Lookout's API queried. The job-flow
// suite (test/jobflow) and `make run` (internal/build/cmd/run) share it.
//
// What is simulated: KWOK's pods run no containers (a job "runs" for the
// time its annotation asks, then succeeds or fails with its exit code),
// and NetworkPolicies are not enforced (no CNI).
package jobflow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TB is what the job flow uses of a test: *testing.T satisfies it, and so
// does a Session, which runs the same code in a command.
type TB = testenv.TB

// A Session runs the job flow outside a test, as `make run` does: Fatal
// ends the function Run runs with an error, Cleanup's functions run (last
// first) when Run returns, and TempDir's directories are removed then.
type Session struct {
	ctx  context.Context //nolint:containedctx // Context() returns it, as testing.T's does.
	logf func(string, ...any)
	root string

	mu       sync.Mutex
	cleanups []func()
	n        int
}

// fatal carries a Session's Fatal out of the function Run runs.
type fatal struct{ msg string }

// NewSession returns a Session whose Context is ctx, logging through logf.
func NewSession(ctx context.Context, logf func(string, ...any)) (*Session, error) {
	root, err := os.MkdirTemp("", "armada-jobflow-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a temporary directory")
	}
	return &Session{ctx: ctx, logf: logf, root: root}, nil
}

// Run runs fn, returning the error its Fatal reported, if any. It does
// not run the cleanups: Close does.
func (s *Session) Run(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
	}()
	fn()
	return nil
}

// Close runs the cleanups, last registered first, and removes the
// temporary directories.
func (s *Session) Close() {
	s.mu.Lock()
	cs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for _, c := range slices.Backward(cs) {
		c()
	}
	_ = os.RemoveAll(s.root)
}

// Helper does nothing: a Session reports no file and line.
func (s *Session) Helper() {}

// Cleanup registers f to run at Close.
func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Context is the Session's context.
func (s *Session) Context() context.Context { return s.ctx }

// Fatal ends Run's function with args as its error.
func (s *Session) Fatal(args ...any) { panic(fatal{msg: fmt.Sprint(args...)}) }

// Fatalf ends Run's function with a formatted error.
func (s *Session) Fatalf(format string, args ...any) {
	panic(fatal{msg: fmt.Sprintf(format, args...)})
}

// Logf logs through the Session's logf.
func (s *Session) Logf(format string, args ...any) { s.logf(format, args...) }

// TempDir returns a new directory, removed at Close.
func (s *Session) TempDir() string {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	dir := filepath.Join(s.root, fmt.Sprintf("%03d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.Fatalf("cannot create a temporary directory: %v", err)
	}
	return dir
}

// FindRelease returns Armada's binaries and source at version (x.y.z),
// and armadactl's path, or what to build if they are missing.
func FindRelease(ctx context.Context, version string) (podrun.Release, string, error) {
	root, err := testutil.ToolDir("ARMADA_BIN_ROOT")
	if err != nil {
		return podrun.Release{}, "", err
	}
	dir := filepath.Join(root, "armada-v"+version)
	for _, b := range append(slices.Clone(podrun.Binaries), "armadactl") {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			return podrun.Release{}, "", errors.Errorf("Armada %s binary %s is missing from %s: run `make armada-bins` (or tools/armada/build.sh v%s)",
				version, b, dir, version)
		}
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return podrun.Release{}, "", errors.Wrap(err, "cannot run go env GOMODCACHE")
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "github.com", "armadaproject", "armada@v"+version)
	if _, err := os.Stat(filepath.Join(src, "config", "server", "config.yaml")); err != nil {
		return podrun.Release{}, "", errors.Errorf("Armada %s source is not in the module cache (%v): run `make armada-bins`", version, err)
	}
	// The UI is built for the release make lookoutui builds (the
	// default); Lookout at another serves its API and no UI.
	rel := podrun.Release{BinDir: dir, SourceDir: src, LookoutUI: testutil.LookoutUIDir(root, version)}
	return rel, filepath.Join(dir, "armadactl"), nil
}

// WaitFor polls cond every second until it holds, failing t after limit
// with cond's last message. It returns how long it waited. progress, if
// not nil, receives each new message.
func WaitFor(t TB, limit time.Duration, what string, cond func() (bool, string), progress func(string)) time.Duration {
	t.Helper()
	w := testutil.Wait{Timeout: limit, Interval: time.Second, Progress: progress, Context: t.Context()}
	return w.Until(t, what, cond)
}

// RunnerState summarises what keeps the runner's pods from running.
func RunnerState(r *podrun.Runner) string {
	procs := r.Processes()
	out := make([]string, 0, len(procs))
	for id, procs := range procs {
		state := fmt.Sprintf("%d processes", len(procs))
		if err := r.Err(id); err != nil {
			state = err.Error()
		}
		out = append(out, id+": "+firstLine(state))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// PodLogs returns the tail of every pod's log.
func PodLogs(r *podrun.Runner) string {
	var b strings.Builder
	logs := r.Logs()
	keys := make([]string, 0, len(logs))
	for k := range logs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, f := range logs[k] {
			data, _ := os.ReadFile(f) //nolint:gosec // The runner's own log files.
			fmt.Fprintf(&b, "--- %s\n%s\n", f, testutil.Tail(string(data), 25))
		}
	}
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
