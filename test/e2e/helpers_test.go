package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

const (
	claimAPIVersion = "platform.armadaproject.io/v1alpha1"
	fieldOwner      = client.FieldOwner("armada-e2e")
	// timeout bounds every wait for the control plane to converge. Alone,
	// a claim converges in seconds; go test runs this package beside the
	// others on two cores, where a claim with in-cluster backing services
	// has taken over 90 s. The bound only says when to give up: the tests
	// log how long each wait took and assert no duration.
	timeout = 3 * time.Minute
)

// kube is a client for the control plane's API server.
func kube() client.Client { return cp.Client() }

// exampleDocs reads an example file's documents, changing every namespace
// to ns so examples can run side by side.
func exampleDocs(t *testing.T, name, ns string) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.ReadDocs(testutil.Example(name + ".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d}
		u.SetNamespace(ns)
		out = append(out, u)
	}
	return out
}

// claimOf returns the ArmadaClaim among docs.
func claimOf(t *testing.T, docs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, d := range docs {
		if d.GetKind() == "ArmadaClaim" {
			return d
		}
	}
	t.Fatal("no ArmadaClaim in the example")
	return nil
}

// namespace creates a namespace that enforces and warns on the restricted
// Pod Security Standard, and deletes it when the test ends. A namespace of
// the same name still being deleted (an earlier run of the test, with
// -count) is waited for first.
func namespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	waitFor(t, "namespace "+name+" created", func() (bool, string) {
		err := kube().Create(context.Background(), ns.DeepCopy())
		if err == nil {
			return true, ""
		}
		old := &corev1.Namespace{}
		if kerrors.IsAlreadyExists(err) && kube().Get(context.Background(), client.ObjectKey{Name: name}, old) == nil && old.DeletionTimestamp != nil {
			return false, "an earlier namespace " + name + " is still being deleted"
		}
		t.Fatalf("cannot create namespace %s: %v", name, err)
		return false, ""
	})
	t.Cleanup(func() { _ = kube().Delete(context.Background(), ns) })
}

// apply server-side applies objects, and the Secrets the examples refer to
// but do not contain (as a user would have created them).
func apply(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	testutil.Apply(context.Background(), t, kube(), fieldOwner, objs...)
}

// userSecrets creates the Secrets an example's claim references.
func userSecrets(t *testing.T, claim *unstructured.Unstructured) {
	t.Helper()
	refs := [][]string{{"postgres", "passwordSecretRef"}, {"redis", "passwordSecretRef"}, {"pulsar", "tokenSecretRef"}}
	for _, r := range refs {
		ref, found, _ := unstructured.NestedStringMap(claim.Object, append([]string{"spec"}, r...)...)
		if !found {
			continue
		}
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": ref["name"], "namespace": claim.GetNamespace()},
			"stringData": map[string]any{ref["key"]: "e2e-" + r[0]},
		}}
		apply(t, s)
	}
}

// get fetches an object, or returns nil if it does not exist.
func get(t *testing.T, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return testutil.Get(context.Background(), t, kube(), apiVersion, kind, ns, name)
}

// condition returns a condition's status, reason and message.
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string) {
	c, _ := manifest.ConditionOf(u, typ)
	return c.Status, c.Reason, c.Message
}

// waitFor polls cond until it is true, failing the test with cond's last
// message and the control plane's logs after timeout.
func waitFor(t *testing.T, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	return waitWithin(t, timeout, what, cond)
}

// waitWithin is waitFor with its own limit, for what takes longer than a
// single Armada converging.
func waitWithin(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	return testutil.Wait{Timeout: limit, Logs: func() string { return cp.LogTails(30) }}.Until(t, what, cond)
}

// claimCondition waits until the claim has a condition with a status.
func claimCondition(t *testing.T, claim *unstructured.Unstructured, typ, want string) time.Duration {
	t.Helper()
	return waitFor(t, fmt.Sprintf("claim %s %s=%s", claim.GetName(), typ, want), func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
		if c == nil {
			return false, "claim not found"
		}
		s, r, m := condition(c, typ)
		return s == want, fmt.Sprintf("%s=%s %s: %s", typ, s, r, m)
	})
}

// claimAccepted waits until the claim itself (an ArmadaClaim or
// ArmadaQueueClaim, by its kind; not its cluster-scoped XR,
// which a team may not be able to read) reports the function's Accepted
// condition with status want; a refusal must also have reason Refused and
// a message containing every one of parts. It returns the message.
func claimAccepted(t *testing.T, claim *unstructured.Unstructured, want string, parts ...string) string {
	t.Helper()
	return accepted(t, claim.GetKind(), claim, want, parts...)
}

// ref is a composed resource reference.
type ref struct{ APIVersion, Kind, Namespace, Name string }

func (r ref) String() string { return r.Kind + " " + strings.TrimPrefix(r.Namespace+"/"+r.Name, "/") }

// composed returns the XR of a claim and its composed resource references.
func composed(t *testing.T, claim *unstructured.Unstructured) (*unstructured.Unstructured, []ref) {
	t.Helper()
	c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	if c == nil {
		t.Fatalf("claim %s is gone", claim.GetName())
	}
	name, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
	xr := get(t, claimAPIVersion, "XArmada", "", name)
	if xr == nil {
		t.Fatalf("XR %q of claim %s not found", name, claim.GetName())
	}
	all := simulate.RefsOf(xr)
	refs := make([]ref, 0, len(all))
	for _, r := range all {
		refs = append(refs, ref(r))
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	return xr, refs
}

// byKind filters references.
func byKind(refs []ref, kinds ...string) []ref {
	var out []ref
	for _, r := range refs {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, r)
			}
		}
	}
	return out
}

// markHealthy reports what the kubelet, the workload controllers,
// CloudNativePG and the providers that do not run here would: see
// simulate.MarkHealthy. provider-sql's objects are left to provider-sql,
// which runs here: their readiness is the real server's.
func markHealthy(t *testing.T, refs []ref) {
	t.Helper()
	rs := make([]simulate.Ref, 0, len(refs))
	for _, r := range refs {
		if isProviderSQL(r.APIVersion) {
			continue
		}
		rs = append(rs, simulate.Ref(r))
	}
	if err := simulate.MarkHealthy(context.Background(), kube(), rs); err != nil {
		t.Fatal(err)
	}
}

// functionMemory reads function-armada's resident set size and its peak
// since the process started (VmRSS and VmHWM in /proc/<pid>/status), in
// bytes.
func functionMemory(t *testing.T) (rss, peak int64) {
	t.Helper()
	pids := cp.ProcessGroups()[controlplane.ProcFunction]
	if len(pids) == 0 {
		t.Fatal("function-armada was never started")
	}
	// The control plane starts the built binary itself as the group's
	// leader; the last group is the running process.
	path := fmt.Sprintf("/proc/%d/status", pids[len(pids)-1])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read function-armada's memory: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	if rss == 0 || peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in %s", path)
	}
	return rss, peak
}

// functionCalls counts RunFunction calls so far, from function-armada's
// debug log.
func functionCalls(t *testing.T) int {
	t.Helper()
	return functionCallsFor(t, "")
}

// functionCallsFor is functionCalls for the XR named xr ("" for every XR).
func functionCallsFor(t *testing.T, xr string) int {
	t.Helper()
	b, err := os.ReadFile(cp.LogPath(controlplane.ProcFunction))
	if err != nil {
		t.Fatalf("cannot read function log: %v", err)
	}
	if xr == "" {
		return strings.Count(string(b), "Composed Armada")
	}
	return strings.Count(string(b), `"xr": "`+xr+`"`)
}

// snapshot records each object the claims compose as what would show a
// change: its UID (a recreated object differs) and its spec generation or,
// for objects that have none (Secrets, Services, RBAC, PriorityClasses),
// its resource version. A PriorityClass also records its resource version,
// value and preemption policy.
func snapshot(t *testing.T, claims ...*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range claims {
		_, refs := composed(t, c)
		for _, r := range refs {
			u := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
			if u == nil {
				out[r.String()] = "missing"
				continue
			}
			v := fmt.Sprintf("uid %s generation %d", u.GetUID(), u.GetGeneration())
			if u.GetGeneration() == 0 || r.Kind == "PriorityClass" {
				v = fmt.Sprintf("uid %s resourceVersion %s", u.GetUID(), u.GetResourceVersion())
			}
			if r.Kind == "PriorityClass" {
				v += fmt.Sprintf(" value %v preemptionPolicy %v", u.Object["value"], u.Object["preemptionPolicy"])
			}
			out[r.String()] = v
		}
	}
	return out
}

// settled waits until the claims' composition has settled and returns its
// snapshot: every claim's XR Synced, every object it references existing,
// and two snapshots a second apart equal. A "before" snapshot taken while
// the claim is still composing would report objects the composition was
// about to create as changed (a ProviderConfig "missing", then created).
func settled(t *testing.T, claims ...*unstructured.Unstructured) map[string]string {
	t.Helper()
	var last map[string]string
	waitFor(t, "the claims' composed objects settled", func() (bool, string) {
		for _, c := range claims {
			xr, _ := composed(t, c)
			if s, r, m := condition(xr, "Synced"); s != "True" {
				last = nil
				return false, fmt.Sprintf("XR of %s/%s Synced=%s %s: %s", c.GetNamespace(), c.GetName(), s, r, m)
			}
		}
		now := snapshot(t, claims...)
		for k, v := range now {
			if v == "missing" {
				last = nil
				return false, k + " is referenced but does not exist yet"
			}
		}
		prev := last
		last = now
		if prev == nil {
			time.Sleep(time.Second)
			return false, "first snapshot taken"
		}
		if !maps.Equal(prev, now) {
			time.Sleep(time.Second)
			return false, fmt.Sprintf("%d of %d objects changed within a second", diffCount(prev, now), len(now))
		}
		return true, ""
	})
	return last
}

// diffCount is the number of keys whose values differ between a and b,
// counting keys only one of them has.
func diffCount(a, b map[string]string) int {
	n := 0
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

// unchanged reports every object whose snapshot changed, appeared or went.
func unchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: was %q, now %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// parallelTests is how many tests that call parallel run at once. They
// mostly wait (for Crossplane, the providers and their creation grace) on
// one shared control plane, so more than the two cores' worth overlap
// those waits without starting another control plane.
const parallelTests = "4"

// parallel marks a test that may run beside the others that call it,
// after every test that does not (go test runs parallel tests last). Such
// a test touches only its own namespaces and the cluster-scoped objects
// its own claims compose, stops or restarts no shared process (the
// function, Crossplane, a worker's API server), changes no cluster-wide
// setting, and never counts function calls in a condition (every XR's
// calls add to the count).
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// pauseProcess stops the control plane's process name (SIGSTOP to its
// process group) and returns what resumes it, which also runs when the
// test ends.
func pauseProcess(t *testing.T, name string) func() {
	t.Helper()
	pids := cp.ProcessGroups()[name]
	if len(pids) == 0 {
		t.Fatalf("%s was never started", name)
	}
	pgid := pids[len(pids)-1]
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatalf("cannot stop %s: %v", name, err)
	}
	var once sync.Once
	resume := func() {
		once.Do(func() {
			if err := syscall.Kill(-pgid, syscall.SIGCONT); err != nil {
				t.Errorf("cannot resume %s: %v", name, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}
