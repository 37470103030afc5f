// Package freeport hands out TCP ports for the components the local control
// plane and the tests start, distinct across every process on this machine
// that uses it.
//
// A port is chosen at random below the kernel's ephemeral range (Range),
// where no outgoing connection's local port lands, and checked free on
// every interface. That alone leaves one race: two test processes (make
// test runs packages side by side, each with its own components) can pick
// the same free port, and a component restarted on its port (fault
// injection) can find it taken by the other. So every port handed out is
// also written, with the pid of the process it went to, to a registry
// file shared by all of the user's processes (a file under os.TempDir,
// changed only under flock), and never handed out again while that
// process lives. Ports are never released early: a process reserves what
// it uses, a few hundred at most, among some 12,800.
package freeport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// registryName is the registry's file name under os.TempDir, followed by
// the user's id: each user's processes share one.
const registryName = "armada-crossplane-ports-"

// attempts bounds the random choices tried for each port.
const attempts = 500

// Range is where ports are chosen, [lo, hi): from 20000 to the first port
// of the kernel's ephemeral range (32768 unless ip_local_port_range says
// otherwise).
func Range() (lo, hi int) {
	lo, hi = 20000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 {
				hi = n
			}
		}
	}
	return lo, hi
}

// Reserve returns n distinct ports, each free on every interface a moment
// ago and reserved for this process until it exits: no other process
// using this package is given them meanwhile.
func Reserve(ctx context.Context, n int) ([]int, error) {
	return reserve(ctx, filepath.Join(os.TempDir(), registryName+strconv.Itoa(os.Getuid())), os.Getpid(), n)
}

// reserve is Reserve with the registry's path and the owner's pid.
func reserve(ctx context.Context, path string, pid, n int) ([]int, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // The path is the registry's, under os.TempDir.
	if err != nil {
		return nil, errors.Wrap(err, "cannot open port registry")
	}
	defer f.Close() //nolint:errcheck // Written and synced below; closing also unlocks.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, errors.Wrap(err, "cannot lock port registry")
	}
	held, err := readRegistry(f)
	if err != nil {
		return nil, err
	}
	lo, hi := Range()
	got := make([]int, 0, n)
	for range n {
		p, err := pick(ctx, lo, hi, held)
		if err != nil {
			return nil, err
		}
		held[p] = pid
		got = append(got, p)
	}
	return got, writeRegistry(f, held)
}

// pick returns a port in [lo, hi) not held and free on every interface.
func pick(ctx context.Context, lo, hi int, held map[int]int) (int, error) {
	for range attempts {
		p := lo + mrand.IntN(hi-lo) //nolint:gosec // Port choice, not security.
		if _, ok := held[p]; ok {
			continue
		}
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, errors.Wrapf(err, "cannot close probe of port %d", p)
		}
		return p, nil
	}
	return 0, errors.Errorf("cannot find a free port in [%d, %d): %d random choices were all taken", lo, hi, attempts)
}

// readRegistry returns the ports the registry holds for processes still
// alive, each with its owner's pid.
func readRegistry(f *os.File) (map[int]int, error) {
	if _, err := f.Seek(0, 0); err != nil {
		return nil, errors.Wrap(err, "cannot read port registry")
	}
	held := map[int]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		var port, pid int
		if _, err := fmt.Sscanf(s.Text(), "%d %d", &port, &pid); err != nil {
			continue // A line of another format: ignore it, it is rewritten.
		}
		if alive(pid) {
			held[port] = pid
		}
	}
	return held, errors.Wrap(s.Err(), "cannot read port registry")
}

// writeRegistry replaces the registry's content with held, sorted by port.
func writeRegistry(f *os.File, held map[int]int) error {
	var b bytes.Buffer
	for _, p := range slices.Sorted(maps.Keys(held)) {
		fmt.Fprintf(&b, "%d %d\n", p, held[p])
	}
	if err := f.Truncate(0); err != nil {
		return errors.Wrap(err, "cannot write port registry")
	}
	if _, err := f.WriteAt(b.Bytes(), 0); err != nil {
		return errors.Wrap(err, "cannot write port registry")
	}
	return errors.Wrap(f.Sync(), "cannot write port registry")
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
