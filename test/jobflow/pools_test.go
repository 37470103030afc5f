package jobflow

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// The claim's pools and executors in this cluster. Two executors in one
// cluster each see every node they tolerate, so each has its own taint:
// the CPU Nodes carry cpuTaint, the GPU Node gpuTaint (as a real GPU node
// group would), and each pool's jobs tolerate their executor's taint
// (scheduling.pools[].jobDefaults, composed from spec.executors[].nodeTaint).
const (
	defaultPool = "default"
	gpuPool     = "gpu"
	// localExecutor and gpuExecutor are the executors' clusterIds.
	localExecutor = "local"
	gpuExecutor   = "gpu"
	cpuTaint      = "armadaproject.io/cpu"
	gpuTaint      = "nvidia.com/gpu"
	gpuTaintValue = "present"
	gpuNode       = "kwok-gpu-1"
)

// poolsSpec is the claim's spec.scheduling.
func poolsSpec() map[string]any {
	return map[string]any{"pools": []any{map[string]any{"name": defaultPool}, map[string]any{"name": gpuPool}, map[string]any{"name": workerPool}}}
}

// executorsSpec are the claim's executors in this cluster: one for the
// CPU Nodes in the default pool, one for the GPU Node in the GPU pool.
func executorsSpec() []any {
	return []any{
		map[string]any{"clusterId": localExecutor, "pool": defaultPool, "nodeTaint": map[string]any{"key": cpuTaint}},
		map[string]any{"clusterId": gpuExecutor, "pool": gpuPool, "nodeTaint": map[string]any{"key": gpuTaint, "value": gpuTaintValue}},
	}
}

// localNodes are the KWOK Nodes of this cluster: two CPU Nodes and a GPU
// Node with four GPUs, each tainted for its executor.
func localNodes() []controlplane.Node {
	cpu := []corev1.Taint{{Key: cpuTaint, Effect: corev1.TaintEffectNoSchedule}}
	return []controlplane.Node{
		{Name: "kwok-node-1", CPU: "16", Memory: "64Gi", Taints: cpu},
		{Name: "kwok-node-2", CPU: "16", Memory: "64Gi", Taints: cpu},
		{
			Name: gpuNode, CPU: "16", Memory: "64Gi", GPU: "4",
			Labels: map[string]string{"nvidia.com/gpu.present": "true"},
			Taints: []corev1.Taint{{Key: gpuTaint, Value: gpuTaintValue, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// testGPUPool submits a job asking for a GPU and checks it ran only in
// the GPU pool: on the GPU executor and the GPU Node, as the pod's
// binding, Lookout and the scheduler's database each show.
func testGPUPool(t *testing.T, f *flow) {
	t.Helper()
	ctx := t.Context()
	jobSet := "gpu"
	job := jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "15s"})
	res := map[string]any{"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
	c := job["podSpec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["resources"] = map[string]any{"requests": res, "limits": res}
	out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, jobSet, job)
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	id := submittedID(t, out)
	if node := podNode(t, f.cp.Client(), id); node != gpuNode {
		t.Errorf("the pod of GPU job %s was bound to node %q, want the GPU Node %s", id, node, gpuNode)
	}
	evs := watch(ctx, t, f.a, "admin", f.adminPassword, jobSet)
	if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Leased", "Running", "Succeeded"}, got) {
		t.Errorf("events of job set %s: got %v, want Leased, Running, Succeeded; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
	}
	jobs := jobflow.WaitLookout(t, f.lookout, f.adminPassword, jobSet, "SUCCEEDED")
	checkPlacement(t, f.be.Postgres, jobs[0], placement{cluster: f.claim.For(t).ExecutorClusterIDOf(f.cp.Client(), gpuExecutor), node: gpuNode, pool: gpuPool})
}

// A placement is where a job's run was: executor, node and pool.
type placement struct{ cluster, node, pool string }

// checkPlacement checks a job's only run, as Lookout and the scheduler's
// database show it, is at want and succeeded.
func checkPlacement(t *testing.T, pg *testenv.Postgres, j jobflow.LookoutJob, want placement) {
	t.Helper()
	if len(j.Runs) != 1 {
		t.Fatalf("lookout: job %s has %d runs, want 1", j.JobID, len(j.Runs))
	}
	r := j.Runs[0]
	got := placement{cluster: r.Cluster, node: fmt.Sprint(deref(r.Node)), pool: fmt.Sprint(deref(r.Pool))}
	if got != want {
		t.Errorf("lookout: job %s ran at %+v, want %+v", j.JobID, got, want)
	}
	row := strings.TrimSpace(pg.MustExec(t, "scheduler", fmt.Sprintf(
		"SELECT executor || ' ' || node || ' ' || pool || ' ' || succeeded FROM runs WHERE job_id = %s", testenv.QuoteLiteral(j.JobID))))
	if wantRow := fmt.Sprintf("%s %s %s true", want.cluster, want.node, want.pool); row != wantRow && row != strings.TrimSuffix(wantRow, "true")+"t" {
		t.Errorf("scheduler database: runs of job %s are %q, want one %q", j.JobID, row, wantRow)
	}
}

var submittedRE = regexp.MustCompile(`Submitted job with id (\S+)`)

// submittedID is the job ID in armadactl submit's output.
func submittedID(t *testing.T, out string) string {
	t.Helper()
	m := submittedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("armadactl submit printed no job id:\n%s", out)
	}
	return m[1]
}

// podNode waits for the pod Armada's executor created for a job (label
// armada_job_id) in cluster c to be bound, and returns its node.
func podNode(t *testing.T, c client.Client, jobID string) string {
	t.Helper()
	node := ""
	jobflow.WaitFor(t, 2*time.Minute, "the pod of job "+jobID+" bound to a node", func() (bool, string) {
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.MatchingLabels{"armada_job_id": jobID}); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				node = p.Spec.NodeName
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods, none bound", len(pods.Items))
	}, nil)
	return node
}
