package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// executorStatus returns the claim's status.executors by clusterId.
func executorStatus(t *testing.T, claim *unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	es, _, _ := unstructured.NestedSlice(c.Object, "status", "executors")
	out := map[string]map[string]any{}
	for _, e := range es {
		m, _ := e.(map[string]any)
		id, _ := m["clusterId"].(string)
		out[id] = m
	}
	return out
}

// waitExecutors waits until status.executors reports each executor's
// readiness as want, and every not-ready one's reason contains reason.
// Healthy workers keep being reported healthy meanwhile.
func waitExecutors(t *testing.T, claim *unstructured.Unstructured, ws []*worker, want map[string]bool, reason string) time.Duration {
	t.Helper()
	return waitWithin(t, faultTimeout, fmt.Sprintf("status.executors ready %v", want), func() (bool, string) {
		_, refs := composed(t, claim)
		markHealthy(t, refs)
		for _, w := range ws {
			if want[w.name] {
				_ = markWorker(w)
			}
		}
		got := executorStatus(t, claim)
		for id, ready := range want {
			e, ok := got[id]
			if !ok {
				return false, fmt.Sprintf("no executor %s in %v", id, got)
			}
			if r, _ := e["ready"].(bool); r != ready {
				return false, fmt.Sprintf("%v", got)
			}
			if msg, _ := e["reason"].(string); !ready && !strings.Contains(msg, reason) {
				return false, fmt.Sprintf("reason of %s does not name %q: %v", id, reason, got)
			}
			if c, _ := e["cluster"].(string); c != "ClusterProviderConfig/"+id {
				return false, fmt.Sprintf("cluster of %s is %q", id, c)
			}
		}
		return true, ""
	})
}

// faultTimeout bounds the waits around an unreachable worker: after
// connection errors provider-kubernetes retries an Object with exponential
// backoff up to a minute, and Crossplane re-runs the function on a
// composed resource's Synced change no later than its one-minute poll.
const faultTimeout = 4 * time.Minute

// unreachable stops worker-gpu's API server: only its executor becomes
// not ready, with a reason naming the cluster, and nothing is deleted in
// either cluster; restarting it recovers.
func unreachable(t *testing.T, claim *unstructured.Unstructured, ws []*worker, remotes []remote) {
	t.Helper()
	gpu := workerOf(t, ws, "worker-gpu")
	if err := gpu.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	d := waitExecutors(t, claim, ws, map[string]bool{"worker-a": true, "worker-gpu": false}, "ClusterProviderConfig/worker-gpu")
	t.Logf("worker-gpu unreachable: its executor not ready %s after its API server stopped: %v", d.Round(time.Millisecond), executorStatus(t, claim)["worker-gpu"]["reason"])
	// Give the provider and Crossplane a few more polls to do harm.
	time.Sleep(10 * time.Second)
	for _, r := range remotes {
		o := get(t, apiK8sObject, "Object", multiNS, r.object)
		if o == nil || o.GetDeletionTimestamp() != nil {
			t.Errorf("Object %s deleted while worker-gpu was unreachable", r.object)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gpu.cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker-gpu API server down for %s", time.Since(stopped).Round(time.Millisecond))
	for _, r := range remotes {
		if o := getIn(t, workerOf(t, ws, r.cluster).kube(), r.obj); o == nil || o.GetDeletionTimestamp() != nil {
			t.Errorf("%s in %s deleted while worker-gpu was unreachable", r.obj, r.cluster)
		}
	}
	d = waitExecutors(t, claim, ws, map[string]bool{"worker-a": true, "worker-gpu": true}, "")
	t.Logf("worker-gpu recovered: its executor ready %s after its API server restarted", d.Round(time.Millisecond))
}
