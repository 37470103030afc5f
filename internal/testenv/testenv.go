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
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/controlplane"
)

// installHint tells a developer how to get the service binaries.
const installHint = "install them with `apt-get install -y postgresql redis-server` (`make test` and .ci/run install them)"

// FreePort returns a TCP port that was free a moment ago on every
// interface (components bind ":port"), chosen at random below the kernel's
// ephemeral range (ip_local_port_range). A port the kernel hands out for
// port 0 comes from that range, as does every outgoing connection's local
// port: tests running beside each other, e2e's many connections, could
// take it between this check and the caller's bind (seen once, a
// scheduler's "address already in use"). Below the range only another
// listener can take it, and a random choice among thousands makes that
// unlikely. If no port there is free, it falls back to one the kernel
// chooses.
func FreePort(tb testing.TB) int {
	tb.Helper()
	lo, hi := freePortRange()
	for range 200 {
		p := lo + mrand.IntN(hi-lo) //nolint:gosec // Port choice, not security.
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("cannot find a free loopback port: %v", err)
	}
	defer l.Close() //nolint:errcheck // Only the port number matters.
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		tb.Fatalf("unexpected listener address %v", l.Addr())
	}
	return addr.Port
}

// freePortRange is where FreePort looks: below the kernel's ephemeral
// range, as the local control plane does.
func freePortRange() (lo, hi int) { return controlplane.FreePortRange() }

// RandomPassword returns a random password of 32 hex characters.
func RandomPassword(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("cannot generate a password: %v", err)
	}
	return hex.EncodeToString(b)
}

// requireExecutable fails the test unless path is an executable file.
func requireExecutable(tb testing.TB, path string) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s is missing: %s", path, installHint)
	}
}

// lookPath finds name on PATH, failing the test if it is absent.
func lookPath(tb testing.TB, name string) string {
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
