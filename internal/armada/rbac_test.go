package armada

import (
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// rbacObject is one RBAC object an install composes: its kind, name,
// referenced role and the worker cluster's config it goes to ("" for this
// cluster, directly or through spec.clusterScope).
type rbacObject struct {
	key, kind, name, roleRefKind, roleRef, cluster string
}

// rbacObjects lists the (Cluster)Roles and bindings of out, unwrapping
// provider-kubernetes Objects.
func rbacObjects(t *testing.T, out *Output, clusterScope string) []rbacObject {
	t.Helper()
	var objs []rbacObject
	for i := range out.Objects {
		o := &out.Objects[i]
		var m map[string]any
		cluster := ""
		if u, ok := o.Object.(*unstructured.Unstructured); ok && u.GetKind() == "Object" {
			var w *unstructured.Unstructured
			w, m = manifest(t, o)
			cluster, _, _ = unstructured.NestedString(w.Object, "spec", "providerConfigRef", "name")
			if cluster == clusterScope {
				cluster = ""
			}
		} else {
			m = toJSONMap(o.Object)
		}
		kind, _ := m["kind"].(string)
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, kind) {
			continue
		}
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		ref, _, _ := unstructured.NestedString(m, "roleRef", "name")
		refKind, _, _ := unstructured.NestedString(m, "roleRef", "kind")
		objs = append(objs, rbacObject{key: o.Key, kind: kind, name: name, roleRefKind: refKind, roleRef: ref, cluster: cluster})
	}
	return objs
}

// TestCrossplaneComposesNoClusterRole is a property test of least
// privilege: for random specs, claimed and namespaced, with local and
// remote executors, nothing composed for this cluster is a ClusterRole, and
// every ClusterRoleBinding there, and every RoleBinding to a ClusterRole,
// refers to a fixed ClusterRole: what
// Crossplane may bind (cluster/rbac). A worker cluster's bindings refer to
// the ClusterRole composed in that same cluster.
func TestCrossplaneComposesNoClusterRole(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	fixed := map[string]bool{}
	for _, r := range FixedClusterRoles() {
		fixed[r.Name] = true
	}
	for _, want := range []string{FixedClusterRoleName("executor"), FixedJobRoleName("executor"), FixedJobRoleName("binoculars")} {
		if !fixed[want] {
			t.Fatalf("fixed ClusterRoles %v lack %s", fixed, want)
		}
	}
	ref := &v1alpha1.ProviderConfigRef{Name: "in-cluster"}
	opts := Options{Rand: KeyedRand([]byte("k"), "xr")}
	localBindings, remoteRoles := 0, 0
	for i := range 100 {
		s := randomSpec(rng)
		if rng.IntN(2) == 0 {
			r := remoteSpec()
			s.Scheduling, s.ExecutorAPI, s.Executors = r.Scheduling, r.ExecutorAPI, r.Executors
			if rng.IntN(2) == 0 {
				s.Executors = s.Executors[1:] // no executor in this cluster
			}
		}
		for _, xr := range []XR{claimed(s), namespacedXR(s, ref)} {
			in, out := renderCase(t, i, xr, opts)
			objs := rbacObjects(t, out, ref.Name)
			for _, o := range objs {
				switch {
				case o.cluster == "" && o.kind == "ClusterRole":
					t.Errorf("case %d (namespaced %t): %s composes ClusterRole %s in this cluster", i, in.Namespaced(), o.key, o.name)
				case o.cluster == "" && o.kind == "ClusterRoleBinding":
					localBindings++
					if !fixed[o.roleRef] {
						t.Errorf("case %d (namespaced %t): %s binds ClusterRole %s, not a fixed one", i, in.Namespaced(), o.key, o.roleRef)
					}
				case o.cluster == "" && o.kind == "RoleBinding" && o.roleRefKind == "ClusterRole":
					localBindings++
					if !fixed[o.roleRef] {
						t.Errorf("case %d (namespaced %t): %s binds ClusterRole %s in a namespace, not a fixed one", i, in.Namespaced(), o.key, o.roleRef)
					}
				case o.kind == "ClusterRole":
					remoteRoles++
				case o.kind == "ClusterRoleBinding":
					if !slices.ContainsFunc(objs, func(r rbacObject) bool {
						return r.kind == "ClusterRole" && r.cluster == o.cluster && r.name == o.roleRef
					}) {
						t.Errorf("case %d: %s in worker cluster %s binds ClusterRole %s, which is not composed there", i, o.key, o.cluster, o.roleRef)
					}
				}
			}
		}
	}
	if localBindings == 0 || remoteRoles == 0 {
		t.Errorf("the generator composed %d bindings in this cluster and %d ClusterRoles in worker clusters; want both", localBindings, remoteRoles)
	}
}

// renderCase validates and renders a generated case's XR, failing the test
// naming the case if either step fails.
func renderCase(t *testing.T, i int, xr XR, opts Options) (*Install, *Output) {
	t.Helper()
	in, errs := New(xr)
	if len(errs) > 0 {
		t.Fatalf("case %d: New: %v", i, errs)
	}
	out, err := Render(in, opts)
	if err != nil {
		t.Fatalf("case %d: Render: %v", i, err)
	}
	return in, out
}
