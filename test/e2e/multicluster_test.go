package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

const (
	apiK8sObject = "kubernetes.m.crossplane.io/v1alpha1"
	multiNS      = "e2e-multi"
	teamNS       = "team-vision"
	teamJobsNS   = "team-vision-jobs"
)

// worker is a worker cluster: a Kubernetes-only control plane reached by
// provider-kubernetes through the ClusterProviderConfig of its name.
type worker struct {
	name string
	cp   *controlplane.ControlPlane
}

func (w *worker) kube() client.Client { return w.cp.Client() }

// remote is one object an Object composes in a worker cluster.
type remote struct {
	object  string // the Object's name in the control cluster
	cluster string // its ClusterProviderConfig
	obj     ref    // the manifest's identity
}

// TestMultiCluster applies examples/multi-cluster.yaml with its two
// ClusterProviderConfigs pointing at two worker clusters (etcd,
// kube-apiserver and kube-controller-manager each, with the
// service-account token controller) and checks what issue 10 promises:
// every remote executor's objects, the Namespace, the executor ClusterRole
// and the PriorityClasses exist in their worker cluster only; each
// identity's token is born in its worker and copied to a connection Secret
// here, never into an Object; the team's job namespace exists in both
// workers; status.executors follows the workers' health, an unreachable
// worker marks only its executor not ready and deletes nothing; deleting
// the claim with deletionPolicy Delete removes the worker objects, and
// applying it again with Orphan and deleting it keeps them.
//
// Simulated: no kubelet or Deployment controller runs anywhere, so the
// test reports the worker Deployments available as simulate does for
// local ones; everything else is the real provider-kubernetes and
// Crossplane.
func TestMultiCluster(t *testing.T) {
	start := time.Now()
	workers := startWorkers(t, "worker-a", "worker-gpu")
	t.Logf("2 worker clusters up in %s", time.Since(start).Round(time.Millisecond))
	connectWorkers(t, workers)

	claim, team := applyMultiCluster(t, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "Delete", "spec", "deletionPolicy")
	})

	t0 := time.Now()
	var remotes []remote
	waitFor(t, "every remote object in its worker cluster", func() (bool, string) {
		remotes = remoteObjects(t, claim)
		markAll(t, claim, workers)
		missing := missingRemotes(t, workers, remotes)
		return len(missing) == 0 && hasEveryKind(remotes) == "", fmt.Sprintf("missing %v; %s", missing, hasEveryKind(remotes))
	})
	t.Logf("%d remote objects in their worker clusters %s after apply", len(remotes), time.Since(t0).Round(time.Millisecond))
	onlyInItsWorker(t, workers, remotes)

	tokens := identityTokens(t, claim, workers)
	noSecretInObjects(t, tokens)

	for _, w := range workers {
		waitFor(t, "team namespace in "+w.name, func() (bool, string) {
			return getIn(t, w.kube(), ref{"v1", "Namespace", "", teamJobsNS}) != nil, "not yet"
		})
	}
	t.Logf("team namespace %s in both worker clusters %s after apply", teamJobsNS, time.Since(t0).Round(time.Millisecond))
	jobServiceAccounts(t, workers, teamJobsNS)

	d := waitExecutors(t, claim, workers, map[string]bool{"worker-a": true, "worker-gpu": true}, "")
	t.Logf("status.executors all ready %s after the remote objects existed", d.Round(time.Millisecond))

	unreachable(t, claim, workers, remotes)

	_ = kube().Delete(context.Background(), team)
	_ = kube().Delete(context.Background(), claim)
	d = waitFor(t, "worker objects deleted with the claim (deletionPolicy Delete)", func() (bool, string) {
		var left []string
		for _, r := range remotes {
			for _, w := range workers {
				if w.name == r.cluster && getIn(t, w.kube(), r.obj) != nil {
					left = append(left, w.name+": "+r.obj.String())
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	t.Logf("worker objects deleted %s after the claim", d.Round(time.Millisecond))

	orphaned(t, workers, claim)
}

// orphaned applies the claim again, alone, with deletionPolicy Orphan,
// waits for its remote objects, deletes it and, once its Objects are gone
// from the control cluster (provider-kubernetes has finished with them),
// checks every remote object is still in its worker cluster.
func orphaned(t *testing.T, ws []*worker, deleted *unstructured.Unstructured) {
	t.Helper()
	waitFor(t, "the deleted claim gone", func() (bool, string) {
		return get(t, claimAPIVersion, "ArmadaClaim", deleted.GetNamespace(), deleted.GetName()) == nil, "still there"
	})
	var claim *unstructured.Unstructured
	for _, d := range multiClusterDocs(t) {
		if d.GetKind() == "ArmadaClaim" {
			_ = unstructured.SetNestedField(d.Object, "Orphan", "spec", "deletionPolicy")
			claim = d
		}
	}
	apply(t, claim)
	t.Cleanup(func() { deleteClaim(t, claim) })
	t0 := time.Now()
	var remotes []remote
	waitFor(t, "every remote object in its worker cluster again (deletionPolicy Orphan)", func() (bool, string) {
		remotes = remoteObjects(t, claim)
		markAll(t, claim, ws)
		missing := missingRemotes(t, ws, remotes)
		return len(missing) == 0 && hasEveryKind(remotes) == "", fmt.Sprintf("missing %v; %s", missing, hasEveryKind(remotes))
	})
	t.Logf("%d remote objects in their worker clusters %s after applying the claim with Orphan", len(remotes), time.Since(t0).Round(time.Millisecond))

	_ = kube().Delete(context.Background(), claim)
	d := waitFor(t, "the claim's Objects gone from the control cluster", func() (bool, string) {
		var left []string
		for _, r := range remotes {
			if get(t, apiK8sObject, "Object", multiNS, r.object) != nil {
				left = append(left, r.object)
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	var missing []string
	for _, r := range remotes {
		if o := getIn(t, workerOf(t, ws, r.cluster).kube(), r.obj); o == nil || o.GetDeletionTimestamp() != nil {
			missing = append(missing, r.cluster+": "+r.obj.String())
		}
	}
	if len(missing) > 0 {
		t.Errorf("deletionPolicy Orphan: %d of %d worker objects deleted with the claim: %v", len(missing), len(remotes), missing)
	} else {
		t.Logf("deletionPolicy Orphan: all %d worker objects kept after the claim and its Objects were deleted (%s)", len(remotes), d.Round(time.Millisecond))
	}
}

// startWorkers starts Kubernetes-only control planes side by side and
// stops them when the test ends.
func startWorkers(t *testing.T, names ...string) []*worker {
	t.Helper()
	clusters := controlplane.StartWorkerClusters(t, names)
	ws := make([]*worker, len(names))
	for i, n := range names {
		c, err := clusters.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = &worker{name: n, cp: c}
	}
	return ws
}

// connectWorkers creates, for each worker, the kubeconfig Secret in
// crossplane-system and the example's ClusterProviderConfig reading it, as
// a platform team would.
func connectWorkers(t *testing.T, ws []*worker) {
	t.Helper()
	for _, w := range ws {
		kc, err := w.cp.KubeconfigBytes()
		if err != nil {
			t.Fatal(err)
		}
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": w.name + "-kubeconfig", "namespace": controlplane.CrossplaneNamespace},
			"data":     map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kc)},
		}}
		apply(t, s)
		t.Cleanup(func() { _ = kube().Delete(context.Background(), s) })
	}
	for _, d := range multiClusterDocs(t) {
		if d.GetKind() == "ClusterProviderConfig" {
			apply(t, d)
			t.Cleanup(func() { _ = kube().Delete(context.Background(), d) })
		}
	}
}

// multiClusterDocs reads examples/multi-cluster.yaml with the Armada's
// namespace renamed to multiNS.
func multiClusterDocs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.ReadDocs(testutil.Example("multi-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d}
		if u.GetNamespace() == "armada" {
			u.SetNamespace(multiNS)
		}
		if u.GetKind() == "ArmadaQueueClaim" {
			_ = unstructured.SetNestedField(u.Object, multiNS, "spec", "armada", "namespace")
		}
		out = append(out, u)
	}
	return out
}

// applyMultiCluster applies the example's Secrets, ArmadaClaim (mutated)
// and ArmadaQueueClaim in their namespaces, and deletes the claims when the
// test ends.
func applyMultiCluster(t *testing.T, mutate func(*unstructured.Unstructured)) (claim, team *unstructured.Unstructured) {
	t.Helper()
	namespace(t, multiNS)
	namespace(t, teamNS)
	// The platform's policies: the Armada's executors may run in the two
	// worker clusters, and the team's queue may attach to it.
	tenancyPolicy(t, multiNS, map[string]any{"providerConfigs": map[string]any{"workerClusters": []any{
		map[string]any{"kind": "ClusterProviderConfig", "name": "worker-a"},
		map[string]any{"kind": "ClusterProviderConfig", "name": "worker-gpu"},
	}}})
	tenancyPolicy(t, teamNS, map[string]any{"queueArmadas": []any{map[string]any{"namespace": multiNS, "name": "armada"}}})
	for _, d := range multiClusterDocs(t) {
		switch d.GetKind() {
		case "ClusterProviderConfig":
			continue
		case "ArmadaClaim":
			mutate(d)
			claim = d
		case "ArmadaQueueClaim":
			team = d
		}
		apply(t, d)
	}
	t.Cleanup(func() {
		_ = kube().Delete(context.Background(), team)
		deleteClaim(t, claim)
		// The namespaces go next (namespace's cleanup), then the workers'
		// ClusterProviderConfigs and the workers: wait until every Object
		// has been finalized first. An Object still being deleted when its
		// namespace is can no longer record its ProviderConfig usage there,
		// and then holds the namespace for good.
		waitFor(t, "the claims' Objects finalized", func() (bool, string) {
			var left []string
			for _, ns := range []string{multiNS, teamNS} {
				for _, o := range objectsIn(t, ns) {
					left = append(left, ns+"/"+o.GetName())
				}
			}
			return len(left) == 0, fmt.Sprintf("%d left: %v", len(left), left)
		})
	})
	return claim, team
}

// remoteObjects returns what the claim's provider-kubernetes Objects with
// a ClusterProviderConfig compose, in the worker cluster it names.
func remoteObjects(t *testing.T, claim *unstructured.Unstructured) []remote {
	t.Helper()
	refs := composedSoFar(t, claim)
	var out []remote
	for _, r := range byKind(refs, "Object") {
		o := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
		if o == nil {
			continue
		}
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "kind")
		name, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "name")
		m, _, _ := unstructured.NestedMap(o.Object, "spec", "forProvider", "manifest")
		u := &unstructured.Unstructured{Object: m}
		if kind != "ClusterProviderConfig" || name == controlplane.ProviderConfigName {
			// The control cluster's own provider config: not remote. The
			// kind check below then reports what is missing.
			continue
		}
		out = append(out, remote{object: o.GetName(), cluster: name, obj: ref{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}})
	}
	return out
}

// composedSoFar returns the claim's composed resources, none before its
// XR exists. Crossplane names the XR in the claim's spec.resourceRef
// before it creates it, so the name alone does not say it exists (seen:
// "XR of claim not found" moments after apply).
func composedSoFar(t *testing.T, claim *unstructured.Unstructured) []ref {
	t.Helper()
	c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	name, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
	if name == "" || get(t, claimAPIVersion, "XArmada", "", name) == nil {
		return nil
	}
	_, refs := composed(t, claim)
	return refs
}

// hasEveryKind returns what is missing from remotes: each executor's
// Deployment, two ServiceAccounts, ClusterRoleBinding, config and identity
// Secrets, and each cluster's Namespace, ClusterRole and PriorityClasses.
func hasEveryKind(remotes []remote) string {
	want := map[string]int{}
	for _, c := range []string{"worker-a", "worker-gpu"} {
		for _, k := range []string{"Deployment", "ClusterRoleBinding", "Namespace", "ClusterRole"} {
			want[c+" "+k] = 1
		}
		// The executor's and its identity's; config, identity and CA;
		// armada-default and armada-preemptible.
		want[c+" ServiceAccount"], want[c+" Secret"], want[c+" PriorityClass"] = 2, 3, 2
	}
	got := map[string]int{}
	for _, r := range remotes {
		got[r.cluster+" "+r.obj.Kind]++
	}
	var missing []string
	for k, n := range want {
		if got[k] < n {
			missing = append(missing, fmt.Sprintf("%s: %d of %d", k, got[k], n))
		}
	}
	sort.Strings(missing)
	if len(missing) == 0 {
		return ""
	}
	return "remote Objects missing: " + strings.Join(missing, ", ")
}

// onlyInItsWorker checks each executor's objects are in its worker
// cluster only, and each worker's shared objects (namespace, ClusterRole,
// PriorityClasses, CA) in the control cluster only by design.
func onlyInItsWorker(t *testing.T, ws []*worker, remotes []remote) {
	t.Helper()
	in := map[string]bool{}
	for _, r := range remotes {
		in[r.cluster+" "+r.obj.String()] = true
	}
	for _, r := range remotes {
		for _, w := range ws {
			if w.name != r.cluster && !in[w.name+" "+r.obj.String()] && getIn(t, w.kube(), r.obj) != nil {
				t.Errorf("%s of %s exists in the other worker cluster %s", r.obj, r.cluster, w.name)
			}
		}
		if localByDesign(r.obj) {
			continue
		}
		if u := getIn(t, kube(), r.obj); u != nil {
			// The identity's connection Secret has the token Secret's name,
			// but not its type.
			if typ, _, _ := unstructured.NestedString(u.Object, "type"); r.obj.Kind == "Secret" && typ != string(corev1.SecretTypeServiceAccountToken) && strings.HasSuffix(r.obj.Name, "-identity") {
				continue
			}
			t.Errorf("%s of %s exists in the control cluster", r.obj, r.cluster)
		}
	}
}

// localByDesign is true of remote objects whose name the control cluster
// also holds on purpose: the Armada's own namespace, its PriorityClasses
// (composed here too) and the CA Secret, which in the example has the
// name of the user's Secret it is copied from.
func localByDesign(r ref) bool {
	return r.Kind == "Namespace" || r.Kind == "PriorityClass" || strings.HasSuffix(r.Name, "-executor-api-ca")
}

// missingRemotes lists remote objects absent from their worker cluster.
func missingRemotes(t *testing.T, ws []*worker, remotes []remote) []string {
	t.Helper()
	var out []string
	for _, r := range remotes {
		w := workerOf(t, ws, r.cluster)
		if getIn(t, w.kube(), r.obj) == nil {
			out = append(out, r.cluster+": "+r.obj.String())
		}
	}
	return out
}

func workerOf(t *testing.T, ws []*worker, name string) *worker {
	t.Helper()
	for _, w := range ws {
		if w.name == name {
			return w
		}
	}
	t.Fatalf("no worker cluster %s", name)
	return nil
}

// getIn fetches an object through c, or returns nil if it does not exist.
func getIn(t *testing.T, c client.Client, r ref) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return testutil.Get(ctx, t, c, r.APIVersion, r.Kind, r.Namespace, r.Name)
}

// markAll reports the control cluster's workloads and Jobs healthy, and
// the executors' Deployments in the worker clusters available, as their
// Deployment controllers would.
func markAll(t *testing.T, claim *unstructured.Unstructured, ws []*worker) {
	t.Helper()
	markHealthy(t, composedSoFar(t, claim))
	for _, w := range ws {
		if err := markWorker(w); err != nil {
			t.Fatalf("cannot mark worker %s healthy: %v", w.name, err)
		}
	}
}

func markWorker(w *worker) error {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("apps/v1")
	l.SetKind("DeploymentList")
	ctx := context.Background()
	if err := w.kube().List(ctx, l, client.InNamespace(multiNS)); err != nil {
		return err
	}
	for i := range l.Items {
		u := &l.Items[i]
		st, _ := simulate.HealthyStatus(u, time.Now())
		u.Object["status"] = st
		if err := w.kube().Status().Update(ctx, u); err != nil && !kerrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// identityTokens checks each executor's token Secret in its worker was
// filled by the worker's token controller and copied, unchanged, into the
// identity connection Secret here. It returns the tokens.
func identityTokens(t *testing.T, claim *unstructured.Unstructured, ws []*worker) []string {
	t.Helper()
	tokens := make([]string, 0, len(ws))
	for _, w := range ws {
		name := claim.GetName() + "-executor-" + w.name + "-identity"
		var token []byte
		d := waitFor(t, "identity token in "+w.name+" copied here", func() (bool, string) {
			s := &corev1.Secret{}
			if err := w.kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: name}, s); err != nil {
				return false, "worker: " + err.Error()
			}
			token = s.Data["token"]
			if len(token) == 0 {
				return false, "worker token Secret not filled yet"
			}
			local := &corev1.Secret{}
			if err := kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: name}, local); err != nil {
				return false, "control: " + err.Error()
			}
			if !bytes.Equal(local.Data["password"], token) {
				return false, fmt.Sprintf("control cluster password has %d bytes, differs from the worker's %d-byte token", len(local.Data["password"]), len(token))
			}
			return true, ""
		})
		t.Logf("%s: token filled in the worker and copied here %s after the remote objects existed", w.name, d.Round(time.Millisecond))
		tokens = append(tokens, string(token))
	}
	return tokens
}

// noSecretInObjects reads back every provider-kubernetes Object in the
// control cluster and fails if its spec holds a token or any password of
// the claim's namespace, in clear or base64. Status is checked too: the
// provider mirrors the remote object there unless told to redact Secrets.
func noSecretInObjects(t *testing.T, tokens []string) {
	t.Helper()
	secrets := map[string]string{}
	for i, tk := range tokens {
		secrets[fmt.Sprintf("identity token %d", i)] = tk
	}
	sl := &corev1.SecretList{}
	if err := kube().List(context.Background(), sl, client.InNamespace(multiNS)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sl.Items {
		for k, v := range s.Data {
			// The generated credentials Secret is keyed by user.
			if lk := strings.ToLower(k); strings.Contains(lk, "password") || strings.Contains(lk, "token") || strings.HasSuffix(s.Name, "-credentials") {
				secrets[s.Name+"/"+k] = string(v)
			}
		}
	}
	if len(secrets) < len(tokens)+2 {
		t.Fatalf("only %d secrets to look for: %v", len(secrets), keys(secrets))
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiK8sObject)
	l.SetKind("ObjectList")
	if err := kube().List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	leaks := 0
	for _, o := range l.Items {
		for _, part := range []string{"spec", "status"} {
			b, err := json.Marshal(o.Object[part])
			if err != nil {
				t.Fatalf("cannot marshal Object %s: %v", o.GetName(), err)
			}
			for what, v := range secrets {
				if v == "" {
					continue
				}
				if strings.Contains(string(b), v) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(v))) {
					t.Errorf("Object %s/%s holds %s in its %s", o.GetNamespace(), o.GetName(), what, part)
					leaks++
				}
			}
		}
	}
	t.Logf("%d Objects read back; %d hold one of %d secrets (%v) in spec or status", len(l.Items), leaks, len(secrets), keys(secrets))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jobServiceAccounts checks that the composed default ServiceAccount of
// job namespace ns (mounting no token) takes over the one a worker
// cluster's kube-controller-manager makes in every namespace as it
// appears, as any cluster's does. Which is first when the namespace
// appears is a race, so the test deletes the composed one with
// provider-kubernetes stopped, waits for Kubernetes to make its own, and
// resumes provider-kubernetes, which must bring that one to the composed
// state.
func jobServiceAccounts(t *testing.T, ws []*worker, ns string) {
	t.Helper()
	sa := ref{"v1", "ServiceAccount", ns, "default"}
	composed := func(w *worker, uid types.UID) func() (bool, string) {
		return func() (bool, string) {
			u := getIn(t, w.kube(), sa)
			if u == nil {
				return false, "none"
			}
			mount, found, _ := unstructured.NestedBool(u.Object, "automountServiceAccountToken")
			return found && !mount && (uid == "" || u.GetUID() == uid),
				fmt.Sprintf("uid %s (want %q), automountServiceAccountToken %t (set: %t), labels %v", u.GetUID(), uid, mount, found, u.GetLabels())
		}
	}
	for _, w := range ws {
		waitFor(t, "the composed default ServiceAccount of "+ns+" in "+w.name, composed(w, ""))
		old := getIn(t, w.kube(), sa)
		resume := pauseProcess(t, controlplane.ProcProviderKubernetes)
		if err := w.kube().Delete(t.Context(), old); err != nil {
			resume()
			t.Fatalf("cannot delete %s in %s: %v", sa, w.name, err)
		}
		var made *unstructured.Unstructured
		waitFor(t, "kube-controller-manager to make "+ns+"/default again in "+w.name+", provider-kubernetes stopped", func() (bool, string) {
			made = getIn(t, w.kube(), sa)
			return made != nil && made.GetUID() != old.GetUID(), "not yet"
		})
		resume()
		if _, found, _ := unstructured.NestedBool(made.Object, "automountServiceAccountToken"); found {
			t.Errorf("Kubernetes' own %s in %s already sets automountServiceAccountToken: %v", sa, w.name, made.Object)
		}
		d := waitFor(t, "Kubernetes' own "+ns+"/default in "+w.name+" brought to the composed state", composed(w, made.GetUID()))
		t.Logf("%s: %s/default, made again by kube-controller-manager, mounts no token %s after provider-kubernetes resumed", w.name, ns, d.Round(time.Millisecond))
	}
}
