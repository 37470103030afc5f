package armada

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// namespacedXR is s as a namespaced Armada "armada" in namespace "armada",
// the same name and namespace claimed gives a legacy XR.
func namespacedXR(s v1alpha1.ArmadaSpec, ref *v1alpha1.ProviderConfigRef) XR {
	return XR{Name: "armada", Namespace: "armada", Spec: s, ClusterScope: ref}
}

// ignoreOwnerMark ignores the ownership mark, which names the claim for a
// claimed XR and the Armada for a namespaced one.
var ignoreOwnerMark = cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == AnnotationOwner })

// clusterScopedKinds are what a namespaced XR cannot compose directly.
var clusterScopedKinds = map[string]bool{
	"PriorityClass": true, "ClusterRole": true, "ClusterRoleBinding": true, "Namespace": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// TestNamespacedRendersTheSameArmada is a property test: for random specs
// (backing-service modes, deletion policy, local and remote executors), the
// legacy (claimed) XR and the namespaced XR compose the same objects under
// the same keys, and the same status and conditions. They differ only where
// scope requires: each cluster-scoped object of the claim is, for the
// namespaced XR, a provider-kubernetes Object in its namespace carrying
// that very object for spec.clusterScope's config, and nothing the
// namespaced XR composes is cluster-scoped or in another namespace.
func TestNamespacedRendersTheSameArmada(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	ref := &v1alpha1.ProviderConfigRef{Name: "in-cluster"}
	opts := Options{Rand: KeyedRand([]byte("k"), "xr")}
	wrapped := 0
	for i := range 100 {
		s := randomSpec(rng)
		if rng.IntN(2) == 0 {
			r := remoteSpec()
			s.Scheduling, s.ExecutorAPI, s.Executors = r.Scheduling, r.ExecutorAPI, r.Executors
			if rng.IntN(2) == 0 {
				s.Executors = s.Executors[1:] // no executor in this cluster
			}
		}
		legacy, errs := New(claimed(s))
		if len(errs) > 0 {
			t.Fatalf("case %d: New(claimed): %v", i, errs)
		}
		ns, errs := New(namespacedXR(s, ref))
		if len(errs) > 0 {
			t.Fatalf("case %d: New(namespaced): %v", i, errs)
		}
		lout, err := Render(legacy, opts)
		if err != nil {
			t.Fatalf("case %d: Render(claimed): %v", i, err)
		}
		nout, err := Render(ns, opts)
		if err != nil {
			t.Fatalf("case %d: Render(namespaced): %v", i, err)
		}
		if diff := cmp.Diff(lout.Status, nout.Status); diff != "" {
			t.Errorf("case %d: status differs (-claimed +namespaced):\n%s", i, diff)
		}
		if diff := cmp.Diff(lout.Conditions, nout.Conditions); diff != "" {
			t.Errorf("case %d: conditions differ (-claimed +namespaced):\n%s", i, diff)
		}
		if len(lout.Objects) != len(nout.Objects) {
			t.Fatalf("case %d: %d objects for the claim, %d for the namespaced XR", i, len(lout.Objects), len(nout.Objects))
		}
		for j := range lout.Objects {
			l, n := &lout.Objects[j], &nout.Objects[j]
			if l.Key != n.Key {
				t.Fatalf("case %d: object %d is %s for the claim, %s for the namespaced XR", i, j, l.Key, n.Key)
			}
			if n.Object.GetNamespace() != "armada" {
				t.Errorf("case %d: %s lands in namespace %q, outside the XR's", i, n.Key, n.Object.GetNamespace())
			}
			kind := l.Object.GetObjectKind().GroupVersionKind().Kind
			// Wrapped: cluster-scoped objects, and those in job namespaces.
			if !clusterScopedKinds[kind] && l.Object.GetNamespace() == legacy.Namespace || kind == "Object" {
				if diff := cmp.Diff(toJSONMap(l.Object), toJSONMap(n.Object), ignoreOwnerMark); diff != "" {
					t.Errorf("case %d: %s differs (-claimed +namespaced):\n%s", i, l.Key, diff)
				}
				continue
			}
			wrapped++
			u, m := manifest(t, n)
			if diff := cmp.Diff(stripNullTimestamps(toJSONMap(l.Object)), m, ignoreOwnerMark); diff != "" {
				t.Errorf("case %d: %s's manifest is not the claim's object (-claimed +namespaced):\n%s", i, l.Key, diff)
			}
			pc, _, _ := unstructured.NestedStringMap(u.Object, "spec", "providerConfigRef")
			if want := map[string]string{"kind": "ClusterProviderConfig", "name": "in-cluster"}; !cmp.Equal(pc, want) {
				t.Errorf("case %d: %s's providerConfigRef is %v, want %v", i, l.Key, pc, want)
			}
			if _, found, _ := unstructured.NestedSlice(u.Object, "spec", "managementPolicies"); found {
				t.Errorf("case %d: %s is orphaned on deletion; a claim's is deleted with it", i, l.Key)
			}
		}
	}
	if wrapped == 0 {
		t.Error("the generator composed no cluster-scoped object")
	}
	t.Logf("%d cluster-scoped objects composed through provider-kubernetes", wrapped)
}

// stripNullTimestamps is what a manifest holds of a typed object.
func stripNullTimestamps(m map[string]any) map[string]any {
	delete(m, "status")
	structenc.DropNullTimestamps(m)
	return m
}

func TestNamespacedRefusals(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     XR
		want   field.ErrorList
	}{
		"ClusterScopeMissing": {
			reason: "Without spec.clusterScope a namespaced Armada cannot compose its PriorityClasses and ClusterRoleBindings: refused, naming the field.",
			xr:     namespacedXR(spec(), nil),
			want: field.ErrorList{field.Required(field.NewPath("spec", "clusterScope", "providerConfigRef"),
				"a namespaced Armada composes its cluster-scoped objects (PriorityClasses, ClusterRoleBindings, job Namespaces, ValidatingAdmissionPolicies) as "+
					"provider-kubernetes Objects in namespace armada; name the kubernetes.m.crossplane.io ClusterProviderConfig "+
					"(or a ProviderConfig in this namespace) that reaches this cluster")},
		},
		"SpecNamespace": {
			reason: "A namespaced Armada composes into its own namespace; spec.namespace (possible only without the XRD's schema) is refused.",
			xr: namespacedXR(spec(func(s *v1alpha1.ArmadaSpec) { s.Namespace = "elsewhere" }),
				&v1alpha1.ProviderConfigRef{Name: "in-cluster"}),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "namespace"),
				"a namespaced Armada runs in its own namespace (armada); remove spec.namespace")},
		},
		"ClaimLabelsIgnored": {
			reason: "A namespaced XR has no claim: labels that look like a claim's change neither its name nor its namespace.",
			xr: func() XR {
				xr := namespacedXR(spec(), &v1alpha1.ProviderConfigRef{Name: "in-cluster"})
				xr.Labels = map[string]string{xcrd.LabelKeyClaimName: "other", xcrd.LabelKeyClaimNamespace: "other"}
				return xr
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, errs := New(tc.xr)
			if diff := cmp.Diff(tc.want, errs); diff != "" {
				t.Errorf("%s\nNew(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
			if len(tc.want) == 0 && (in.Name != "armada" || in.Namespace != "armada" || !in.Namespaced()) {
				t.Errorf("%s\nNew(...): install %s/%s (namespaced %t), want armada/armada (namespaced)", tc.reason, in.Namespace, in.Name, in.Namespaced())
			}
		})
	}
}

// TestObjectIn checks the wrapper a namespaced queue composes outside its
// namespace through: in the given namespace, under the given name, for the
// config, deriving readiness from the object when asked.
func TestObjectIn(t *testing.T) {
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	q := in.Queue("team", armadav1.QueueParameters{PriorityFactor: "1"}, "team-queue")
	o := in.ObjectIn("team-a", "tq-queue", "queue", v1alpha1.ProviderConfigRef{Kind: "ClusterProviderConfig", Name: "in-cluster"}, q, true)
	u, m := manifest(t, &o)
	if u.GetNamespace() != "team-a" || u.GetName() != "tq-queue" || o.Key != "queue" {
		t.Errorf("ObjectIn(...): %s/%s keyed %s, want team-a/tq-queue keyed queue", u.GetNamespace(), u.GetName(), o.Key)
	}
	if m["metadata"].(map[string]any)["namespace"] != in.Namespace {
		t.Errorf("ObjectIn(...): manifest in %v, want the Armada's namespace %s", m["metadata"], in.Namespace)
	}
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "readiness", "policy"); p != "DeriveFromObject" {
		t.Errorf("ObjectIn(...): readiness policy %q, want DeriveFromObject", p)
	}
	if u.GetLabels()[labelComponent] != clusterScopeComponent {
		t.Errorf("ObjectIn(...): labels %v, want component %s", u.GetLabels(), clusterScopeComponent)
	}
}
