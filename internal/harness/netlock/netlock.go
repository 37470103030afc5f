// Package netlock keeps real nodes apart, across the processes of one
// machine (the packages go test runs side by side, two checkouts' runs).
// A real node (internal/harness/node) adds a bridge, a veth per pod and
// netfilter chains whose names are the machine's (kube-router's,
// kube-proxy's); it holds the lock exclusively while it runs, so nodes run
// one at a time. Browsers need no lock: each Chromium runs in a network
// namespace of its own (internal/harness/browser), where a node's links
// coming and going do not reach it.
package netlock

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// File is the lock's file.
func File() string { return filepath.Join(os.TempDir(), "armada-network.lock") }

// Exclusive takes the lock for a change of the machine's network,
// waiting, until ctx is done, while another node holds it. logf hears
// once that it waits. release gives it back.
func Exclusive(ctx context.Context, logf func(string, ...any)) (release func() error, err error) {
	return lock(ctx, syscall.LOCK_EX, "a real node", logf)
}

func lock(ctx context.Context, how int, holder string, logf func(string, ...any)) (func() error, error) {
	f, err := os.OpenFile(File(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, errors.Wrap(err, "cannot open the network lock")
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() error { return errors.Wrap(f.Close(), "cannot release the network lock") }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, errors.Wrap(err, "cannot take the network lock")
		}
		if !waited && logf != nil {
			logf("waiting for %s on this machine to finish: it holds %s", holder, File())
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, errors.Wrap(ctx.Err(), "cannot take the network lock")
		case <-time.After(500 * time.Millisecond):
		}
	}
}
