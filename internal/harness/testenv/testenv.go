// Package testenv starts private, throwaway instances of the services Armada
// depends on (PostgreSQL and Redis) for tests. Every instance listens only on
// a free loopback port, keeps its data in a temporary directory and is stopped
// when the test ends. The helpers never fall back to a system service and
// never skip: a missing binary fails the test with instructions.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
)

// TB is what the starters use of a test: testing.TB satisfies it, and so
// does a command that runs the same servers outside a test (package
// jobflow's Session, for `make run`).
type TB interface { //nolint:interfacebloat // The part of testing.TB the starters use, no more.
	Helper()
	Cleanup(f func())
	Context() context.Context
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}

// installHint tells a developer how to get the service binaries.
const installHint = "install them with `apt-get install -y postgresql redis-server` (`make test` and .ci/run install them)"

// FreePort returns a TCP port free on every interface a moment ago and
// reserved for this test process, so no other test process using package
// ports (the local control plane, other suites' components) is given it:
// see package freeport.
func FreePort(tb TB) int {
	tb.Helper()
	p, err := freeport.Reserve(tb.Context(), 1)
	if err != nil {
		tb.Fatalf("cannot reserve a port: %v", err)
	}
	return p[0]
}

// RandomPassword returns a random password of 32 hex characters.
func RandomPassword(tb TB) string {
	tb.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("cannot generate a password: %v", err)
	}
	return hex.EncodeToString(b)
}

// requireExecutable fails the test unless path is an executable file.
func requireExecutable(tb TB, path string) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s is missing: %s", path, installHint)
	}
}

// lookPath finds name on PATH, failing the test if it is absent.
func lookPath(tb TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("%s is not on PATH: %s", name, installHint)
	}
	return p
}

// runCmd runs cmd and wraps any failure with its output.
func runCmd(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	return errors.Wrapf(err, "%s failed: %s", cmd.String(), out)
}

// startInGroup starts cmd in a process group of its own, writing to logf
// (closed when cmd exits), and kills the group on tb's cleanup. The
// channel it returns is closed when cmd has exited.
func startInGroup(tb TB, cmd *exec.Cmd, logf *os.File) (<-chan struct{}, error) {
	tb.Helper()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	tb.Cleanup(func() {
		KillProcessGroup(cmd.Process)
		<-exited
	})
	return exited, nil
}
