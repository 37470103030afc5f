package jobflow

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
)

// The worker cluster: a second kube-apiserver with kube-scheduler and KWOK
// Nodes of its own, reached by provider-kubernetes through the
// ClusterProviderConfig workerConfig, where the claim's remote executor
// runs in pool workerPool.
const (
	workerConfig   = "worker"
	workerExecutor = "worker"
	workerPool     = "worker"
	workerNode     = "worker-node-1"
)

// remoteExecutor is the claim's executor in the worker cluster.
func remoteExecutor() map[string]any {
	return map[string]any{
		"clusterId": workerExecutor, "pool": workerPool,
		"cluster": map[string]any{"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": workerConfig}},
	}
}

// executorAPICA is the Secret holding the CA the remote executor trusts.
const executorAPICA = "armada-executor-api-ca"

// executorAPI is the claim's spec.executorApi: where the remote executor
// dials the scheduler, trusting the CA in executorAPICA. Every cluster
// here shares the machine's loopback network, so the scheduler's Service
// name stands for the ingress or load balancer a real worker would dial.
func executorAPI() map[string]any {
	return map[string]any{
		"url":         fmt.Sprintf("%s-scheduler.%s.svc:50051", claimName, ns),
		"caSecretRef": map[string]any{"name": executorAPICA, "key": "ca.crt"},
	}
}

// addRemoteExecutor adds the worker cluster's executor to the claim once
// it is Ready, as a platform team would: the executor API's serving
// certificate is signed by the private CA the function generated (the
// claim's <name>-tls Secret, which a claim may not name), so its public
// certificate is copied into a Secret of the team's own first. It waits
// until the claim reports the remote executor ready and is Ready again.
func (f *flow) addRemoteExecutor(t testing.TB) {
	t.Helper()
	c := f.cp.Client()
	tlsSecret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claimName + "-tls"}, tlsSecret); err != nil {
		t.Fatal(err)
	}
	apply(t, c, secret(ns, executorAPICA, "ca.crt", string(tlsSecret.Data["ca.crt"])))
	spec := f.manifest.Object["spec"].(map[string]any)
	spec["executors"] = append(spec["executors"].([]any), remoteExecutor())
	spec["executorApi"] = executorAPI()
	added := time.Now()
	apply(t, c, f.manifest)
	jobflow.WaitFor(t, 6*time.Minute, "the remote executor ready and the claim Ready", func() (bool, string) {
		ready, why := f.claim.ExecutorReady(workerExecutor)
		s, r, m := f.claim.Condition("Ready")
		as, ar, am := f.claim.Condition("Accepted")
		return ready && s == "True", fmt.Sprintf("executor %s ready=%t %s; Ready=%s %s: %s; Accepted=%s %s: %s%s", workerExecutor, ready, why, s, r, m, as, ar, am, f.workerState())
	}, nil)
	t.Logf("remote executor added → ready in %s", time.Since(added).Round(time.Second))
}

// startWorker starts the worker cluster beside the control plane and
// returns a function that waits for it; the test stops it at its end.
func startWorker(t testing.TB) func() *controlplane.ControlPlane {
	t.Helper()
	type started struct {
		c   *controlplane.ControlPlane
		err error
	}
	ch := make(chan started, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		c, err := controlplane.Start(ctx, controlplane.Options{KubernetesOnly: true, JobFlow: true, ServiceAccounts: true})
		ch <- started{c, err}
	}()
	return func() *controlplane.ControlPlane {
		t.Helper()
		s := <-ch
		if s.c != nil {
			t.Cleanup(func() {
				if t.Failed() {
					s.c.Keep()
					t.Logf("worker cluster logs (all kept in %s):\n%s", s.c.DataDir(), s.c.LogTails(20))
				}
				if err := s.c.Stop(); err != nil {
					t.Errorf("cannot stop the worker cluster: %v", err)
				}
			})
		}
		if s.err != nil {
			t.Fatalf("cannot start the worker cluster: %v", s.err)
		}
		return s.c
	}
}

// connectWorker gives the worker its KWOK Node (the jobs run in the namespace the
// claim composes there, which its executor's RoleBinding grants), and
// connects it as a platform team would, through c: a kubeconfig Secret in
// crossplane-system, a ClusterProviderConfig reading it, and the claim's
// namespace's ArmadaTenancyPolicy allowing executors there (without it the
// claim naming the worker is refused: workerClusters allows none by
// default).
func connectWorker(ctx context.Context, t testing.TB, c client.Client, w *controlplane.ControlPlane) {
	t.Helper()
	if err := w.AddNodes(ctx, controlplane.Node{Name: workerNode, CPU: "16", Memory: "64Gi"}); err != nil {
		t.Fatal(err)
	}
	kc, err := w.KubeconfigBytes()
	if err != nil {
		t.Fatal(err)
	}
	apply(t, c, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": workerConfig + "-kubeconfig", "namespace": controlplane.CrossplaneNamespace},
		"data":     map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kc)},
	}}, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "ClusterProviderConfig",
		"metadata": map[string]any{"name": workerConfig},
		"spec": map[string]any{"credentials": map[string]any{
			"source":    "Secret",
			"secretRef": map[string]any{"namespace": controlplane.CrossplaneNamespace, "name": workerConfig + "-kubeconfig", "key": "kubeconfig"},
		}},
	}}, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": jobflow.ClaimAPIVersion, "kind": "ArmadaTenancyPolicy",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{"providerConfigs": map[string]any{
			"workerClusters": []any{map[string]any{"kind": "ClusterProviderConfig", "name": workerConfig}},
		}},
	}})
}

// testRemoteExecutor submits a job for the worker pool and checks it ran
// in the worker cluster: its pod bound to the worker's Node there and to
// none here, its run on the remote executor as Lookout and the scheduler's
// database show it.
func testRemoteExecutor(t *testing.T, f *flow) {
	t.Helper()
	ctx, w := t.Context(), f.worker
	jobSet := "remote"
	job := jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "15s"})
	// Only the worker's Node fits: a node selector may name only labels
	// the executors track (Armada's executor tracks kubernetes.io/hostname;
	// seen: a job selecting a label of our own was refused by the
	// scheduler's submit check, fitting no pool).
	job["podSpec"].(map[string]any)["nodeSelector"] = map[string]any{corev1.LabelHostname: workerNode}
	out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, jobSet, job)
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	id := submittedID(t, out)
	if node := podNode(t, w.Client(), id); node != workerNode {
		t.Errorf("the pod of job %s in the worker cluster was bound to node %q, want %s", id, node, workerNode)
	}
	var here corev1.PodList
	if err := f.cp.Client().List(ctx, &here, client.MatchingLabels{"armada_job_id": id}); err != nil {
		t.Fatal(err)
	}
	if len(here.Items) != 0 {
		t.Errorf("job %s for the worker pool has %d pods in the control cluster, want none", id, len(here.Items))
	}
	evs := watch(ctx, t, f.a, "admin", f.adminPassword, jobSet)
	if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Leased", "Running", "Succeeded"}, got) {
		t.Errorf("events of job set %s: got %v, want Leased, Running, Succeeded; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
	}
	jobs := jobflow.WaitLookout(t, f.lookout, f.adminPassword, jobSet, "SUCCEEDED")
	checkPlacement(t, f.be.Postgres, jobs[0], placement{cluster: f.claim.For(t).ExecutorClusterIDOf(w.Client(), workerExecutor), node: workerNode, pool: workerPool})
}
