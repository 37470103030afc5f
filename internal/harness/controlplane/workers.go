package controlplane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// WorkerClusters are the real Kubernetes API servers standing in for the
// worker clusters the render's Objects name, by providerConfigRef name.
type WorkerClusters struct {
	mu   sync.Mutex
	cps  map[string]*ControlPlane
	errs map[string]error
	done chan struct{}
}

// StartWorkerClusters starts one Kubernetes-only control plane (etcd,
// kube-apiserver, kube-controller-manager) per cluster, concurrently, in
// the background; Get waits for one.
func StartWorkerClusters(t testing.TB, clusters []string) *WorkerClusters {
	t.Helper()
	w := &WorkerClusters{cps: map[string]*ControlPlane{}, errs: map[string]error{}, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cp, err := Start(ctx, Options{KubernetesOnly: true, ServiceAccounts: true})
			w.mu.Lock()
			defer w.mu.Unlock()
			w.cps[c], w.errs[c] = cp, err
		})
	}
	go func() { wg.Wait(); close(w.done) }()
	t.Cleanup(func() {
		<-w.done
		for c, cp := range w.cps {
			if cp == nil {
				continue
			}
			if t.Failed() {
				cp.Keep()
				t.Logf("worker cluster %s logs (all kept in %s):\n%s", c, cp.DataDir(), cp.LogTails(15))
			}
			if err := cp.Stop(); err != nil {
				t.Errorf("cannot stop worker cluster %s: %v", c, err)
			}
		}
	})
	return w
}

// Get returns the worker cluster of a providerConfigRef name once it is up.
func (w *WorkerClusters) Get(cluster string) (*ControlPlane, error) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cps[cluster], errors.Wrapf(w.errs[cluster], "cannot start worker cluster %s", cluster)
}
