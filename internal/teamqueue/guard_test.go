package teamqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// guarded is what TestJobNamespaceGuards reads of a composed object (its
// manifest, for a provider-kubernetes Object): where it goes, the Pod
// Security level it enforces, and whose it is.
type guarded struct {
	Kind, Namespace, Enforce, Owner, Cluster string
}

// guardsOf reads the Namespaces, ResourceQuotas and LimitRanges among
// objs, by composition resource name.
func guardsOf(t *testing.T, objs []armada.Object) map[string]guarded {
	t.Helper()
	out := map[string]guarded{}
	for _, o := range objs {
		var m map[string]any
		cluster := ""
		if u, ok := o.Object.(*unstructured.Unstructured); ok && u.GetKind() == "Object" {
			m, _, _ = unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
			cluster, _, _ = unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
		} else {
			var err error
			if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object); err != nil {
				t.Fatal(err)
			}
		}
		u := unstructured.Unstructured{Object: m}
		switch u.GetKind() {
		case "Namespace", "ResourceQuota", "LimitRange":
			out[o.Key] = guarded{
				Kind: u.GetKind(), Namespace: u.GetNamespace(), Enforce: u.GetLabels()["pod-security.kubernetes.io/enforce"],
				Owner: u.GetAnnotations()[armada.AnnotationOwner], Cluster: cluster,
			}
		}
	}
	return out
}

// TestJobNamespaceGuards: every job namespace a team queue composes
// enforces its tenant's Pod Security level and carries the policy's
// ResourceQuota and LimitRange, with the queue's mark, composed the way
// the namespace is: directly for a claim's queue, through
// provider-kubernetes Objects for a namespaced one, and in every worker
// cluster.
func TestJobNamespaceGuards(t *testing.T) {
	const mark = "ArmadaQueueClaim team-ml/ml"
	guards := tenancy.Policy{Name: "team-ml", Spec: tenancyv1.TenancyPolicySpec{JobNamespaces: tenancyv1.JobNamespacePolicy{
		PodSecurity:   tenancyv1.PodSecurityBaseline,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
		LimitRange: &corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}},
	}}}
	worker := func(s *v1alpha1.ArmadaSpec) {
		s.ExecutorAPI = &v1alpha1.ExecutorAPI{URL: "executors.example.com:443"}
		s.Executors = []v1alpha1.Executor{{ClusterID: "here"}, {ClusterID: "a", Cluster: &v1alpha1.ExecutorCluster{
			ProviderConfigRef: v1alpha1.ProviderConfigRef{Name: "worker-a"},
		}}}
	}
	cases := map[string]struct {
		reason string
		xr     XR
		target *armada.Install
		policy tenancy.Policy
		want   map[string]guarded
	}{
		"BuiltIn": {
			reason: "Without a policy the job namespace enforces restricted and holds nothing else.",
			xr:     claim(nil),
			target: target(t),
			want: map[string]guarded{
				"namespace-team-ml-jobs": {Kind: "Namespace", Enforce: "restricted", Owner: mark},
			},
		},
		"Policy": {
			reason: "The policy's level, ResourceQuota and LimitRange, in the job namespace, with the queue's mark.",
			xr:     claim(nil),
			target: target(t),
			policy: guards,
			want: map[string]guarded{
				"namespace-team-ml-jobs":        {Kind: "Namespace", Enforce: "baseline", Owner: mark},
				"namespace-team-ml-jobs-quota":  {Kind: "ResourceQuota", Namespace: "team-ml-jobs", Owner: mark},
				"namespace-team-ml-jobs-limits": {Kind: "LimitRange", Namespace: "team-ml-jobs", Owner: mark},
			},
		},
		"Namespaced": {
			reason: "A namespaced queue composes them as it composes the namespace: through Objects of its cluster-scope config.",
			xr:     namespacedQueue("team-ml", nil),
			target: namespacedTarget(t, &v1alpha1.ProviderConfigRef{Name: "in-cluster"}),
			policy: guards,
			want: map[string]guarded{
				"namespace-team-ml-jobs":        {Kind: "Namespace", Enforce: "baseline", Owner: "ArmadaQueue team-ml/ml", Cluster: "in-cluster"},
				"namespace-team-ml-jobs-quota":  {Kind: "ResourceQuota", Namespace: "team-ml-jobs", Owner: "ArmadaQueue team-ml/ml", Cluster: "in-cluster"},
				"namespace-team-ml-jobs-limits": {Kind: "LimitRange", Namespace: "team-ml-jobs", Owner: "ArmadaQueue team-ml/ml", Cluster: "in-cluster"},
			},
		},
		"WorkerClusters": {
			reason: "Jobs run in every worker cluster of the Armada: the namespace there carries the same level, quota and limits.",
			xr:     claim(nil),
			target: target(t, worker),
			policy: guards,
			want: map[string]guarded{
				"namespace-team-ml-jobs":                                 {Kind: "Namespace", Enforce: "baseline", Owner: mark},
				"namespace-team-ml-jobs-quota":                           {Kind: "ResourceQuota", Namespace: "team-ml-jobs", Owner: mark},
				"namespace-team-ml-jobs-limits":                          {Kind: "LimitRange", Namespace: "team-ml-jobs", Owner: mark},
				"cluster-worker-a-team-ml-namespace-team-ml-jobs":        {Kind: "Namespace", Enforce: "baseline", Owner: mark, Cluster: "worker-a"},
				"cluster-worker-a-team-ml-namespace-team-ml-jobs-quota":  {Kind: "ResourceQuota", Namespace: "team-ml-jobs", Owner: mark, Cluster: "worker-a"},
				"cluster-worker-a-team-ml-namespace-team-ml-jobs-limits": {Kind: "LimitRange", Namespace: "team-ml-jobs", Owner: mark, Cluster: "worker-a"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errs := Render(tc.xr, tc.target, tc.policy)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if diff := cmp.Diff(tc.want, guardsOf(t, out.Objects)); diff != "" {
				t.Errorf("%s\nRender(...) job namespaces: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
