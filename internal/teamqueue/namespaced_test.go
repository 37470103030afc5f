package teamqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// namespacedTarget is a namespaced Armada "armada" in namespace "armada",
// with spec.clusterScope ref (nil for none).
func namespacedTarget(t *testing.T, ref *v1alpha1.ProviderConfigRef) *armada.Install {
	t.Helper()
	claimed := target(t)
	in, errs := armada.New(armada.XR{Name: "armada", Namespace: "armada", Spec: claimed.Spec, ClusterScope: ref})
	if ref != nil && len(errs) > 0 {
		t.Fatal(errs)
	}
	return in
}

// namespacedQueue is an ArmadaQueue "ml" in namespace ns for that Armada.
func namespacedQueue(ns string, ref *v1alpha1.ProviderConfigRef) XR {
	xr := claim(nil)
	xr.Name, xr.Labels, xr.Namespace, xr.ClusterScope = "ml", nil, ns, ref
	xr.Spec.Quota = nil
	return xr
}

func TestRenderNamespaced(t *testing.T) {
	cpc := &v1alpha1.ProviderConfigRef{Name: "in-cluster"}
	type obj struct{ Key, Kind, Namespace, ProviderConfig string }
	cases := map[string]struct {
		reason string
		xr     XR
		target *armada.Install
		want   []obj
		errs   field.ErrorList
	}{
		"SameNamespace": {
			reason: "A queue beside its Armada composes the Queue directly; only the jobs' namespace and the RoleBindings in it go through Objects.",
			xr:     namespacedQueue("armada", nil),
			target: namespacedTarget(t, cpc),
			want: []obj{
				{Key: "queue", Kind: "Queue", Namespace: "armada"},
				{Key: "namespace-team-ml-jobs", Kind: "Object", Namespace: "armada", ProviderConfig: "ClusterProviderConfig/in-cluster"},
				{Key: "namespace-team-ml-jobs-serviceaccount", Kind: "Object", Namespace: "armada", ProviderConfig: "ClusterProviderConfig/in-cluster"},
				{Key: "namespace-team-ml-jobs-binoculars-jobs", Kind: "Object", Namespace: "armada", ProviderConfig: "ClusterProviderConfig/in-cluster"},
				{Key: "namespace-team-ml-jobs-executor-local-jobs", Kind: "Object", Namespace: "armada", ProviderConfig: "ClusterProviderConfig/in-cluster"},
			},
		},
		"OwnClusterScopeWins": {
			reason: "The queue's own spec.clusterScope wins over the Armada's.",
			xr:     namespacedQueue("team-ml", &v1alpha1.ProviderConfigRef{Kind: "ProviderConfig", Name: "team"}),
			target: namespacedTarget(t, cpc),
			want: []obj{
				{Key: "queue", Kind: "Object", Namespace: "team-ml", ProviderConfig: "ProviderConfig/team"},
				{Key: "namespace-team-ml-jobs", Kind: "Object", Namespace: "team-ml", ProviderConfig: "ProviderConfig/team"},
				{Key: "namespace-team-ml-jobs-serviceaccount", Kind: "Object", Namespace: "team-ml", ProviderConfig: "ProviderConfig/team"},
				{Key: "namespace-team-ml-jobs-binoculars-jobs", Kind: "Object", Namespace: "team-ml", ProviderConfig: "ProviderConfig/team"},
				{Key: "namespace-team-ml-jobs-executor-local-jobs", Kind: "Object", Namespace: "team-ml", ProviderConfig: "ProviderConfig/team"},
			},
		},
		"NoClusterScope": {
			reason: "With neither the queue's nor a ClusterProviderConfig of the Armada's, the queue is refused, naming what to set.",
			xr:     namespacedQueue("team-ml", nil),
			target: namespacedTarget(t, &v1alpha1.ProviderConfigRef{Kind: "ProviderConfig", Name: "armada-only"}),
			errs: field.ErrorList{field.Required(field.NewPath("spec", "clusterScope", "providerConfigRef"),
				"a namespaced ArmadaQueue composes its job namespaces and, for an Armada in another namespace, its queue there as "+
					"provider-kubernetes Objects in namespace team-ml; name the kubernetes.m.crossplane.io ClusterProviderConfig (or a "+
					"ProviderConfig in this namespace) that reaches this cluster, or set it on Armada armada/armada")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errs := Render(tc.xr, tc.target, tenancy.Policy{})
			if diff := cmp.Diff(tc.errs, errs); diff != "" {
				t.Fatalf("%s\nRender(...): -want errs, +got errs:\n%s", tc.reason, diff)
			}
			if out == nil {
				return
			}
			var got []obj
			for _, o := range out.Objects {
				g := obj{Key: o.Key, Kind: o.Object.GetObjectKind().GroupVersionKind().Kind, Namespace: o.Object.GetNamespace()}
				if g.Kind == "Object" {
					pc := o.Object.(interface{ UnstructuredContent() map[string]any }).UnstructuredContent()["spec"].(map[string]any)["providerConfigRef"].(map[string]any)
					g.ProviderConfig = pc["kind"].(string) + "/" + pc["name"].(string)
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRender(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
