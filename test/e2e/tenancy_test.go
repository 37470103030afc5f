package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenancyPolicy applies the platform's ArmadaTenancyPolicy for namespace
// ns (its name is the namespace's), and deletes it when the test ends.
// Tests name their own namespaces' policies and never "default", which
// would govern every other test's namespaces.
func tenancyPolicy(t *testing.T, ns string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimAPIVersion, "kind": "ArmadaTenancyPolicy",
		"metadata": map[string]any{"name": ns}, "spec": spec,
	}}
	apply(t, p)
	t.Cleanup(func() { _ = kube().Delete(context.Background(), p) })
	return p
}

// accepted waits until an object (a claim of any kind) reports the
// function's Accepted condition with status want; a refusal must have
// reason Refused and name every one of parts. It returns the message.
func accepted(t *testing.T, kind string, obj *unstructured.Unstructured, want string, parts ...string) string {
	t.Helper()
	var msg string
	waitFor(t, fmt.Sprintf("%s %s/%s Accepted=%s naming %q", kind, obj.GetNamespace(), obj.GetName(), want, parts), func() (bool, string) {
		c := get(t, claimAPIVersion, kind, obj.GetNamespace(), obj.GetName())
		if c == nil {
			return false, "not found"
		}
		s, r, m := condition(c, "Accepted")
		msg = m
		ok := s == want && (want == "True" || r == "Refused")
		for _, p := range parts {
			ok = ok && strings.Contains(m, p)
		}
		return ok, fmt.Sprintf("Accepted=%s %s: %s", s, r, m)
	})
	return msg
}

// TestTenancyPolicy: two tenants' minimal claims, each namespace with the
// platform's ArmadaTenancyPolicy. Tenant b's claim naming what its policy
// does not allow (a worker cluster's provider config, an image registry, a
// PriorityClass value over its ceiling, auth in a config override) is
// refused on the claim, naming the field and the policy's setting, and
// neither tenant's composed objects change (UIDs and generations, after
// settling); what the policy allows is accepted. A malformed
// spec.imageRegistry is refused at apply. Tenant b's team queue on tenant
// a's Armada is refused until b's policy lists that Armada, then composes.
func TestTenancyPolicy(t *testing.T) {
	nsA, nsB := "tenancy-a", "tenancy-b"
	tenancyPolicy(t, nsA, map[string]any{})
	tenancyPolicy(t, nsB, map[string]any{
		"imageRegistries": []any{"registry.example.com/mirror"},
		"maxPriority":     int64(5000),
	})
	a, b := applyExample(t, "minimal", nsA), applyExample(t, "minimal", nsB)
	for _, c := range []*unstructured.Unstructured{a, b} {
		claimCondition(t, c, "Synced", "True")
	}
	convergeAll(t, a, b)
	claimAccepted(t, b, "True")

	// refused applies a change to tenant b's claim, waits for the refusal
	// naming parts, and checks after settling that neither tenant's
	// composed objects changed. The "before" is taken once both claims'
	// objects settled: the previous subtest's fix is Accepted before it
	// rolls tenant b's Deployments out (their generation moves on after).
	refused := func(t *testing.T, change func(*unstructured.Unstructured), parts ...string) {
		t.Helper()
		start := time.Now()
		before := settled(t, a, b)
		t.Logf("both tenants' objects settled in %s", time.Since(start).Round(time.Millisecond))
		if err := updateClaim(t, b, change); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		msg := claimAccepted(t, b, "False", parts...)
		t.Logf("refused in %s on tenant b's claim: %s", time.Since(start).Round(time.Millisecond), msg)
		time.Sleep(3 * time.Second) // let any stray update land
		unchanged(t, before, snapshot(t, a, b))
	}

	t.Run("WorkerCluster", func(t *testing.T) {
		refused(t, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(c.Object, []any{
				map[string]any{"clusterId": "local", "pool": "default"},
				map[string]any{"clusterId": "victim", "pool": "default", "cluster": map[string]any{
					"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "victim-cluster"},
				}},
			}, "spec", "executors")
			_ = unstructured.SetNestedField(c.Object, "armada.example:443", "spec", "executorApi", "url")
		}, `spec.executors[1].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "victim-cluster"`,
			`ArmadaTenancyPolicy "tenancy-b" spec.providerConfigs.workerClusters`)
		fixed(t, b, func(c *unstructured.Unstructured) {
			unstructured.RemoveNestedField(c.Object, "spec", "executors")
			unstructured.RemoveNestedField(c.Object, "spec", "executorApi")
		})
	})

	t.Run("ImageRegistry", func(t *testing.T) {
		err := updateClaim(t, b, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, "evil.example.com/x y", "spec", "imageRegistry")
		})
		if err == nil || !strings.Contains(err.Error(), "spec.imageRegistry") {
			t.Errorf("a malformed spec.imageRegistry: got %v, want the schema's refusal naming the field", err)
		}
		refused(t, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, "evil.example.com/x", "spec", "imageRegistry")
		}, `spec.imageRegistry: Forbidden: "evil.example.com/x" is not from an allowed registry`,
			`ArmadaTenancyPolicy "tenancy-b" spec.imageRegistries`)
		fixed(t, b, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, "registry.example.com/mirror", "spec", "imageRegistry")
		})
		waitFor(t, "tenant b's server from the allowed registry", func() (bool, string) {
			d := get(t, "apps/v1", "Deployment", nsB, b.GetName()+"-server")
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
			return strings.HasPrefix(img, "registry.example.com/mirror/"), "image " + img
		})
		fixed(t, b, func(c *unstructured.Unstructured) { unstructured.RemoveNestedField(c.Object, "spec", "imageRegistry") })
	})

	t.Run("PriorityValue", func(t *testing.T) {
		names := defaultPriorityClassNames(nsB, b.GetName())
		classes := func(urgent int64) func(*unstructured.Unstructured) {
			return func(c *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(c.Object, map[string]any{
					"defaultPriorityClass": names[0],
					"priorityClasses": []any{
						map[string]any{"name": names[0], "priority": int64(1000)},
						map[string]any{"name": names[1], "priority": int64(900), "preemptible": true},
						map[string]any{"name": nsB + "-urgent", "priority": urgent},
					},
				}, "spec", "scheduling")
			}
		}
		refused(t, classes(1000000000), "spec.scheduling.priorityClasses[2].priority: Invalid value: 1000000000: above the ceiling 5000",
			`ArmadaTenancyPolicy "tenancy-b" spec.maxPriority`)
		if get(t, "scheduling.k8s.io/v1", "PriorityClass", "", nsB+"-urgent") != nil {
			t.Errorf("PriorityClass %s-urgent exists while refused", nsB)
		}
		fixed(t, b, classes(5000))
		d := waitFor(t, "the allowed PriorityClass composed", func() (bool, string) {
			pc := get(t, "scheduling.k8s.io/v1", "PriorityClass", "", nsB+"-urgent")
			return pc != nil && fmt.Sprint(pc.Object["value"]) == "5000", fmt.Sprintf("%v", pc != nil)
		})
		t.Logf("the allowed PriorityClass composed %s after the claim was Accepted", d.Round(time.Millisecond))
		fixed(t, b, func(c *unstructured.Unstructured) { unstructured.RemoveNestedField(c.Object, "spec", "scheduling") })
	})

	t.Run("AuthOverride", func(t *testing.T) {
		refused(t, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(c.Object, map[string]any{"auth": map[string]any{
				"basicAuth": map[string]any{"users": map[string]any{"eve": map[string]any{"password": "x", "groups": []any{"armada-admins"}}}},
			}}, "spec", "components", "server", "config")
		}, "spec.components.server.config.auth: Forbidden", `ArmadaTenancyPolicy "tenancy-b" spec.allowAuthConfig`)
		fixed(t, b, func(c *unstructured.Unstructured) { unstructured.RemoveNestedField(c.Object, "spec", "components") })
	})

	t.Run("QueueTarget", func(t *testing.T) {
		before := settled(t, a, b)
		q := teamQueueClaim(nsA, nsB, a.GetName())
		apply(t, q)
		t.Cleanup(func() { _ = kube().Delete(context.Background(), q) })
		msg := accepted(t, "ArmadaQueueClaim", q, "False", "spec.armada: Forbidden: Armada tenancy-a/armada is in another namespace",
			`ArmadaTenancyPolicy "tenancy-b" spec.queueArmadas`)
		t.Logf("on tenant b's queue claim: %s", msg)
		time.Sleep(3 * time.Second)
		if refs := queueRefs(t, q); len(refs) != 0 {
			t.Errorf("the refused queue composed %v", refs)
		}
		if ns := get(t, "v1", "Namespace", "", nsB+"-ml"); ns != nil {
			t.Errorf("the refused queue's namespace %s exists", nsB+"-ml")
		}
		unchanged(t, before, snapshot(t, a, b))

		tenancyPolicy(t, nsB, map[string]any{"queueArmadas": []any{map[string]any{"namespace": nsA, "name": a.GetName()}}})
		// Crossplane runs the function again on its next reconcile of the
		// XR; a change to the claim starts one now.
		touch(t, get(t, claimAPIVersion, "XArmadaQueue", "", queueXR(t, q)))
		accepted(t, "ArmadaQueueClaim", q, "True")
		// Its job namespace, the RoleBindings there for tenant a's executor
		// and binoculars, and its Queue, by composition resource name.
		jobs := "namespace-" + nsB + "-ml"
		want := []string{jobs, jobs + "-binoculars-jobs", jobs + "-executor-local-jobs", jobs + "-serviceaccount", "queue"}
		waitFor(t, "the allowed queue composed", func() (bool, string) {
			d := cmp.Diff(want, queueComposed(t, q))
			return d == "", "composed (-want +got):\n" + d
		})
	})
}

// queueXR is the name of a team queue claim's XR.
func queueXR(t *testing.T, q *unstructured.Unstructured) string {
	t.Helper()
	c := get(t, claimAPIVersion, "ArmadaQueueClaim", q.GetNamespace(), q.GetName())
	name, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
	return name
}

// queueComposed are the composition resource names of what a team queue
// claim's XR composes, sorted ("missing <ref>" for a reference to an object
// that does not exist).
func queueComposed(t *testing.T, q *unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	for _, r := range queueRefs(t, q) {
		m, _ := r.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		u := get(t, s("apiVersion"), s("kind"), s("namespace"), s("name"))
		if u == nil {
			names = append(names, fmt.Sprintf("missing %s %s/%s", s("kind"), s("namespace"), s("name")))
			continue
		}
		names = append(names, u.GetAnnotations()["crossplane.io/composition-resource-name"])
	}
	sort.Strings(names)
	return names
}

// queueRefs are the resources a team queue claim's XR composes.
func queueRefs(t *testing.T, q *unstructured.Unstructured) []any {
	t.Helper()
	name := queueXR(t, q)
	if name == "" {
		return nil
	}
	xr := get(t, claimAPIVersion, "XArmadaQueue", "", name)
	if xr == nil {
		return nil
	}
	refs, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	return refs
}

// touch annotates an object so its controller reconciles it now.
func touch(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.armadaproject.io/touched":%q}}}`, time.Now().Format(time.RFC3339Nano))
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	if err := kube().Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("cannot touch %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
