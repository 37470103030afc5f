package node

import (
	"context"
	"testing"
	"time"
)

// startTimeout bounds StartForTest's bring-up: the images' builds, then
// containerd and the kubelet.
const startTimeout = 10 * time.Minute

// StartForTest starts a node for a test, failing the test if it cannot
// start, and registers a cleanup that stops it (first logging the tails
// of containerd's and the kubelet's logs and keeping the node's directory
// if the test failed). Progress goes to t.Logf unless o.Logf is set.
func StartForTest(t testing.TB, o Options) *Node {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	n, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("cannot start node: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			n.Keep()
			t.Logf("node logs (kept in %s):\n%s", n.Dir(), n.LogTails(40))
		}
		if err := n.Stop(); err != nil {
			t.Errorf("cannot stop node: %v", err)
		}
	})
	return n
}
