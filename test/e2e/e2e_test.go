// Package e2e applies ArmadaClaims to a real local control plane (etcd,
// kube-apiserver, kube-controller-manager, Crossplane core,
// provider-kubernetes, provider-sql and function-armada as processes) and checks the
// whole loop: composition, schema validation, status, gating, upgrades,
// invalid input, deletion and faults.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// cp is the control plane every test shares; bringing one up per test
// would cost seconds each.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// Set before any client is made: controller-runtime otherwise prints
	// a stack trace saying its logger was never set.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	var err error
	start := time.Now()
	logf := func(f string, a ...any) { _, _ = fmt.Fprintf(os.Stdout, "controlplane: "+f+"\n", a...) }
	cp, err = controlplane.Start(ctx, controlplane.Options{
		Debug: true, LeastPrivilege: true, Logf: logf, ProviderPollInterval: 5 * time.Second,
		// provider-sql creates and drops the databases of an External
		// PostgreSQL with an admin Secret on the private servers the
		// tests start (TestSQLDataProtection).
		RunProviderSQL: true,
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the control plane:", err)
		os.Exit(1)
	}
	logf("up in %s", time.Since(start).Round(time.Millisecond))
	setParallel()
	code := m.Run()
	if code != 0 {
		// Keep every log of a failed run for reading afterwards.
		cp.Keep()
		logf("a test failed: logs and state kept in %s", cp.DataDir())
	}
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot stop the control plane:", err)
		code = 1
	}
	os.Exit(code)
}

// setParallel runs parallelTests tests at once unless -test.parallel was
// given.
func setParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", parallelTests)
	}
}

// install applies an example in its own namespace and waits until the
// claim is Synced. It returns the claim.
func install(t *testing.T, example, ns string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	return installDocs(t, example, ns, exampleDocs(t, example, ns), mutate...)
}

// installDocs is install for an example's documents the caller has
// changed, such as the Secrets it holds.
func installDocs(t *testing.T, example, ns string, docs []*unstructured.Unstructured, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	calls := functionCalls(t)
	claim := applyDocs(t, ns, docs, mutate...)
	start := time.Now()
	claimCondition(t, claim, "Synced", "True")
	waitFor(t, "XR composed and Synced", func() (bool, string) {
		xr, refs := composed(t, claim)
		s, r, m := condition(xr, "Synced")
		return s == "True" && len(refs) > 0, fmt.Sprintf("Synced=%s %s: %s, %d composed", s, r, m, len(refs))
	})
	t.Logf("%s: claim Synced and its XR composed %s after apply, %d function calls",
		example, time.Since(start).Round(time.Millisecond), functionCalls(t)-calls)
	return claim
}

// applyExample applies an example in its own restricted namespace, with
// the Secrets its claim references, without waiting. The claim is deleted
// when the test ends.
func applyExample(t *testing.T, example, ns string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	return applyDocs(t, ns, exampleDocs(t, example, ns), mutate...)
}

// applyDocs is applyExample for documents already read.
func applyDocs(t *testing.T, ns string, docs []*unstructured.Unstructured, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	namespace(t, ns)
	claim := claimOf(t, docs)
	for _, m := range mutate {
		m(claim)
	}
	userSecrets(t, claim)
	apply(t, docs...)
	t.Cleanup(func() { deleteClaim(t, claim) })
	return claim
}

// deleteClaim deletes a claim and waits until its cluster-wide
// PriorityClasses are garbage-collected, so no test's cluster-wide objects
// outlive it.
func deleteClaim(t *testing.T, claim *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	_ = kube().Delete(ctx, claim)
	waitFor(t, "PriorityClasses of "+claim.GetNamespace()+" collected", func() (bool, string) {
		pcs := &schedulingv1.PriorityClassList{}
		if err := kube().List(ctx, pcs, client.MatchingLabels{"crossplane.io/claim-namespace": claim.GetNamespace()}); err != nil {
			return false, err.Error()
		}
		return len(pcs.Items) == 0, fmt.Sprintf("%d left", len(pcs.Items))
	})
}

// converge marks Jobs and workloads healthy until the claim is Ready,
// logging how many rounds and function calls it took.
func converge(t *testing.T, claim *unstructured.Unstructured) {
	t.Helper()
	convergeAll(t, claim)
}

// convergeAll is converge for several claims at once: each round marks
// every claim's Jobs and workloads healthy, so no claim's XR waits out a
// reconcile backoff while another converges. Each claim has the time one
// converging alone has.
func convergeAll(t *testing.T, claims ...*unstructured.Unstructured) {
	t.Helper()
	calls, start, rounds := functionCalls(t), time.Now(), 0
	waitWithin(t, time.Duration(len(claims))*timeout, "claims Ready", func() (bool, string) {
		rounds++
		xrs := make([]*unstructured.Unstructured, len(claims))
		for i, claim := range claims {
			xr, refs := composed(t, claim)
			markHealthy(t, refs)
			xrs[i] = xr
		}
		for i, claim := range claims {
			c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
			s, r, m := condition(c, "Ready")
			// Ready must describe the current spec: a claim's conditions
			// lag its XR's by a reconcile, so also wait for the running
			// version.
			want, found, _ := unstructured.NestedString(c.Object, "spec", "version")
			if !found {
				want = armada.DefaultVersion
			}
			running, _, _ := unstructured.NestedString(c.Object, "status", "version", "running")
			if s != "True" || running != want {
				_, xrReason, xrMessage := condition(xrs[i], "Ready")
				return false, fmt.Sprintf("claim %s/%s: Ready=%s %s %s; running %q, want %q; its XR: %s %s", c.GetNamespace(), c.GetName(), s, r, m, running, want, xrReason, xrMessage)
			}
		}
		return true, ""
	})
	t.Logf("%d claim(s) Ready %s after the first health report (%d rounds, %d function calls)",
		len(claims), time.Since(start).Round(time.Millisecond), rounds, functionCalls(t)-calls)
}

// TestExamples applies every example: each becomes Synced, every composed
// object exists and passed the API server's validation, every workload is
// admitted by the restricted Pod Security Standard with no warning, and
// the claim reports the XR's status.
func TestExamples(t *testing.T) {
	for _, example := range []string{"minimal", "production", "multi-pool"} {
		t.Run(example, func(t *testing.T) {
			ns := "e2e-" + example
			// As written: default priority class names are the claim's own
			// and the explicit ones (production, multi-pool) are distinct.
			claim := install(t, example, ns)
			converge(t, claim)
			_, refs := composed(t, claim)
			for _, r := range refs {
				if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
					t.Errorf("composed %s does not exist", r)
				}
			}
			if n := len(byKind(refs, "Deployment", "StatefulSet")); n < 8 {
				t.Errorf("%d workloads composed, want at least the 8 components", n)
			}
			if n := len(byKind(refs, "NetworkPolicy")); n < 10 {
				t.Errorf("%d NetworkPolicies composed, want the default deny and one per component and Job", n)
			}
			restrictedAdmission(t, ns, refs)

			c := get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
			comps, _, _ := unstructured.NestedMap(c.Object, "status", "components")
			for name, s := range comps {
				if ready, _ := s.(map[string]any)["ready"].(bool); !ready {
					t.Errorf("claim status.components.%s = %v, want ready", name, s)
				}
			}
			// The XRD defaults spec.version to the newest release; an
			// example may pin another (production runs 0.22.7).
			want, _, _ := unstructured.NestedString(c.Object, "spec", "version")
			if example == "minimal" && want != armada.DefaultVersion {
				t.Errorf("claim spec.version = %q, want the XRD's default %s", want, armada.DefaultVersion)
			}
			if v, _, _ := unstructured.NestedString(c.Object, "status", "version", "running"); v != want {
				t.Errorf("claim status.version.running = %q, want %s", v, want)
			}
			if e, _, _ := unstructured.NestedString(c.Object, "status", "endpoints", "grpc"); e == "" {
				t.Errorf("claim status.endpoints.grpc is empty")
			}
		})
	}
}

// warnings collects API server warnings.
type warnings struct{ msgs []string }

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _, text string) {
	w.msgs = append(w.msgs, text)
}

// restrictedAdmission server-side dry-runs each composed workload, and a
// pod from its template, in the restricted namespace, collecting warnings.
func restrictedAdmission(t *testing.T, ns string, refs []ref) {
	t.Helper()
	w := &warnings{}
	cfg := cp.RESTConfig()
	cfg.WarningHandlerWithContext = w
	var _ rest.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range byKind(refs, "Deployment", "StatefulSet", "Job") {
		u := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
		tpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
		// A StatefulSet's pods mount the claims its controller creates.
		claims, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates")
		for _, c := range claims {
			name, _, _ := unstructured.NestedString(c.(map[string]any), "metadata", "name")
			vols, _, _ := unstructured.NestedSlice(tpl, "spec", "volumes")
			vols = append(vols, map[string]any{"name": name, "persistentVolumeClaim": map[string]any{"claimName": name + "-" + r.Name + "-0"}})
			_ = unstructured.SetNestedSlice(tpl, vols, "spec", "volumes")
		}
		for _, obj := range []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "metadata": map[string]any{"name": r.Name + "-dryrun", "namespace": ns}, "spec": u.Object["spec"]}},
			{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": r.Name + "-pod", "namespace": ns}, "spec": tpl["spec"]}},
		} {
			if r.Kind == "Job" && obj.GetKind() == "Job" {
				// A Job's selector is generated; let the server do it again.
				_ = unstructured.SetNestedField(obj.Object, false, "spec", "manualSelector")
				unstructured.RemoveNestedField(obj.Object, "spec", "selector")
				for _, l := range []string{"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name"} {
					unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", l)
				}
			}
			if err := c.Create(context.Background(), obj, client.DryRunAll); err != nil {
				t.Errorf("restricted namespace refused %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
			checked++
		}
	}
	if len(w.msgs) > 0 {
		t.Errorf("Pod Security warnings: %s", strings.Join(w.msgs, "; "))
	}
	t.Logf("%d workloads and pods admitted under restricted Pod Security with no warning", checked)
}

// TestMigrationsGateComponents: before the migration Jobs complete only the
// components without a database run; completing them rolls out the rest.
func TestMigrationsGateComponents(t *testing.T) {
	claim := install(t, "minimal", "e2e-gating")
	_, refs := composed(t, claim)
	if n := len(byKind(refs, "Job")); n != 3 {
		t.Fatalf("%d Jobs composed, want 3: two migrations and the Pulsar topic-init Job", n)
	}
	for _, r := range byKind(refs, "Deployment", "StatefulSet") {
		for _, gated := range []string{"-server", "-scheduler", "-lookout"} {
			if strings.HasSuffix(r.Name, gated) || strings.Contains(r.Name, gated+"-ingester") {
				t.Errorf("%s composed before its migration completed", r)
			}
		}
	}
	for typ, reason := range map[string]string{"ComponentsReady": "WaitingForMigration", "MigrationsComplete": "Running"} {
		waitFor(t, "claim "+typ+"=False/"+reason, func() (bool, string) {
			c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
			s, r, m := condition(c, typ)
			return s == "False" && r == reason, fmt.Sprintf("%s=%s %s: %s", typ, s, r, m)
		})
	}
	converge(t, claim)
}

// TestUpdatesTouchOnlyWhatChanged changes one component's replicas, then
// another's config, and checks nothing else's spec changed.
func TestUpdatesTouchOnlyWhatChanged(t *testing.T) {
	claim := install(t, "minimal", "e2e-update")
	converge(t, claim)
	// versions records each composed object's spec generation (workloads)
	// or resource version (Secrets, Services: no generation).
	versions := func() map[string]string {
		_, refs := composed(t, claim)
		out := map[string]string{}
		for _, r := range byKind(refs, "Deployment", "StatefulSet", "Secret", "Service", "Job", "NetworkPolicy") {
			u := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
			out[r.String()] = fmt.Sprint(u.GetGeneration())
			if r.Kind == "Secret" || r.Kind == "Service" {
				out[r.String()] = u.GetResourceVersion()
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		path    []string
		value   any
		changes []string
	}{
		{
			name: "Replicas", path: []string{"server", "replicas"}, value: int64(2),
			changes: []string{"Deployment e2e-update/armada-server"},
		},
		{
			name: "Config", path: []string{"scheduler", "config"}, value: map[string]any{"scheduling": map[string]any{"maximumSchedulingRate": 42.0}},
			changes: []string{"Secret e2e-update/armada-scheduler-config", "StatefulSet e2e-update/armada-scheduler"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := versions()
			c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
			_ = unstructured.SetNestedField(c.Object, tc.value, append([]string{"spec", "components"}, tc.path...)...)
			apply(t, c)
			waitFor(t, tc.name+" applied", func() (bool, string) {
				after := versions()
				for _, k := range tc.changes {
					if after[k] == before[k] {
						return false, k + " unchanged"
					}
				}
				return true, ""
			})
			time.Sleep(3 * time.Second) // let any stray update land
			after := versions()
			for k, v := range after {
				changed := v != before[k]
				want := slices.Contains(tc.changes, k)
				if changed != want {
					t.Errorf("%s changed=%t, want %t", k, changed, want)
				}
			}
		})
	}
}

// TestUpgrade moves a 0.22.6 Armada to 0.22.7: new migration Jobs run
// first, the running components keep 0.22.6 until they complete, and a
// downgrade is refused.
func TestUpgrade(t *testing.T) {
	claim := install(t, "minimal", "e2e-upgrade", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "0.22.6", "spec", "version")
	})
	converge(t, claim)
	image := func() string {
		d := &appsv1.Deployment{}
		if err := kube().Get(context.Background(), client.ObjectKey{Namespace: "e2e-upgrade", Name: "armada-server"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	if got := image(); got != "gresearch/armada-server:0.22.6" {
		t.Fatalf("server image = %s, want 0.22.6", got)
	}

	c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	_ = unstructured.SetNestedField(c.Object, "0.22.7", "spec", "version")
	apply(t, c)
	waitFor(t, "0.22.7 migration Jobs", func() (bool, string) {
		jobs := &batchv1.JobList{}
		_ = kube().List(context.Background(), jobs, client.InNamespace("e2e-upgrade"))
		n := 0
		for _, j := range jobs.Items {
			if strings.Contains(j.Name, "-0-22-7-") {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d of 2", n)
	})
	if got := image(); got != "gresearch/armada-server:0.22.6" {
		t.Errorf("server image before the 0.22.7 migration completed = %s, want 0.22.6 held", got)
	}
	converge(t, claim)
	if got := image(); got != "gresearch/armada-server:0.22.7" {
		t.Errorf("server image after the upgrade = %s, want 0.22.7", got)
	}

	c = get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	_ = unstructured.SetNestedField(c.Object, "0.22.6", "spec", "version")
	c.SetManagedFields(nil)
	err := kube().Patch(context.Background(), c, client.Apply, fieldOwner, client.ForceOwnership) //nolint:staticcheck // See testutil.Apply.
	if err == nil || !strings.Contains(err.Error(), "spec.version cannot be downgraded") {
		t.Errorf("downgrade: got %v, want a refusal naming spec.version", err)
	}
}

// TestInvalidClaims: the schema rejects what it can express; the function
// reports the rest as a failed condition, and nothing running is removed.
func TestInvalidClaims(t *testing.T) {
	claim := install(t, "minimal", "e2e-invalid")
	converge(t, claim)
	_, before := composed(t, claim)

	bad := claim.DeepCopy()
	_ = unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"clusterId": "c1", "pool": "gpu"}}, "spec", "executors")
	bad.SetManagedFields(nil)
	err := kube().Patch(context.Background(), bad, client.Apply, fieldOwner, client.ForceOwnership) //nolint:staticcheck // See testutil.Apply.
	if err == nil || !strings.Contains(err.Error(), "spec.executors[].pool must name a pool") {
		t.Errorf("executor in an unknown pool: got %v, want the XRD's CEL rule", err)
	}

	c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
	_ = unstructured.SetNestedStringSlice(c.Object, []string{"redis-without-port"}, "spec", "redis", "addrs")
	apply(t, c)
	waitFor(t, "XR Synced=False naming spec.redis.addrs", func() (bool, string) {
		xr, _ := composed(t, claim)
		s, r, m := condition(xr, "Synced")
		return s == "False" && strings.Contains(m, "spec.redis.addrs[0]"), fmt.Sprintf("Synced=%s %s: %s", s, r, m)
	})
	time.Sleep(3 * time.Second)
	for _, r := range before {
		if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
			t.Errorf("%s was removed after an invalid edit", r)
		}
	}
}

// TestDeleteGarbageCollects deletes a claim and waits for every composed
// object to go.
func TestDeleteGarbageCollects(t *testing.T) {
	claim := install(t, "minimal", "e2e-delete")
	converge(t, claim)
	_, refs := composed(t, claim)
	if err := kube().Delete(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	d := waitFor(t, "composed objects deleted", func() (bool, string) {
		left := 0
		for _, r := range refs {
			if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) != nil {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d of %d left", left, len(refs))
	})
	t.Logf("%d composed objects deleted %s after the claim", len(refs), d.Round(time.Millisecond))
}

// credentialsData is the data of the one credentials Secret in ns.
func credentialsData(t *testing.T, ns string) map[string][]byte {
	t.Helper()
	return secretData(t, ns, "credentials")
}

// secretData is the data of the one composed Secret of a component in ns.
func secretData(t *testing.T, ns, component string) map[string][]byte {
	t.Helper()
	secrets := &corev1.SecretList{}
	if err := kube().List(context.Background(), secrets, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/component": component}); err != nil {
		t.Fatal(err)
	}
	switch len(secrets.Items) {
	case 0:
		return nil
	case 1:
		return secrets.Items[0].Data
	}
	t.Fatalf("%d %s Secrets in %s, want 1", len(secrets.Items), component, ns)
	return nil
}

// TestSharedClusterPriorityClasses: an Armada that already composes the
// legacy names armada-default and armada-preemptible (every Armada did,
// before names were per Armada) keeps them when its spec names none:
// running jobs reference them. A second claim naming one of them
// explicitly is refused on its claim, naming the field, and the first
// Armada is untouched.
func TestSharedClusterPriorityClasses(t *testing.T) {
	legacy := []string{"armada-default", "armada-preemptible"}
	first := install(t, "minimal", "e2e-shared-a", func(u *unstructured.Unstructured) {
		// What an Armada composed before: the chart's names.
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"name": legacy[0], "priority": int64(1000)},
			map[string]any{"name": legacy[1], "priority": int64(900), "preemptible": true},
		}, "spec", "scheduling", "priorityClasses")
	})
	converge(t, first)
	before := settled(t, first)

	// The spec now names no classes, as an existing claim's never did.
	calls := functionCalls(t)
	if err := updateClaim(t, first, func(c *unstructured.Unstructured) {
		unstructured.RemoveNestedField(c.Object, "spec", "scheduling")
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the XR without spec.scheduling composed twice", func() (bool, string) {
		xr, _ := composed(t, first)
		_, has, _ := unstructured.NestedFieldNoCopy(xr.Object, "spec", "scheduling", "priorityClasses")
		n := functionCalls(t) - calls
		return !has && n >= 2, fmt.Sprintf("XR has spec.scheduling.priorityClasses: %t; %d function calls", has, n)
	})
	// The XR's status, written with the function's last result; the
	// claim's follows a reconcile later.
	xr, _ := composed(t, first)
	if got, _, _ := unstructured.NestedStringSlice(xr.Object, "status", "scheduling", "priorityClasses"); !slices.Equal(got, legacy) {
		t.Errorf("XR status.scheduling.priorityClasses = %q, want the legacy names kept %q", got, legacy)
	}
	unchanged(t, before, snapshot(t, first))

	ns := "e2e-shared-b"
	second := applyExample(t, "minimal", ns, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": legacy[0], "priority": int64(1000)}},
			"spec", "scheduling", "priorityClasses")
	})
	msg := claimAccepted(t, second, "False", "spec.scheduling.priorityClasses[0].name", legacy[0], "already belongs to ArmadaClaim e2e-shared-a/"+first.GetName())
	t.Logf("refusal on the second claim: %s", msg)
	unchanged(t, before, snapshot(t, first))
}
