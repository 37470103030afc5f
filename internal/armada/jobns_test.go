package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// jobNamespaceView is what a test checks of the job namespaces an install
// composes, by cluster ("" for this one).
type jobNamespaceView struct {
	// Namespaces are each job namespace's annotations, by cluster/name.
	Namespaces map[string]map[string]string
	// Bindings are each job RoleBinding's ClusterRole, by
	// cluster/namespace/name.
	Bindings map[string]string
}

// viewJobNamespaces reads the Namespaces and job RoleBindings an output
// composes, unwrapping worker clusters' Objects.
func viewJobNamespaces(t *testing.T, objs []Object) jobNamespaceView {
	t.Helper()
	v := jobNamespaceView{Namespaces: map[string]map[string]string{}, Bindings: map[string]string{}}
	for _, o := range objs {
		cluster, m := "", toJSONMap(o.Object)
		if u, ok := o.Object.(*unstructured.Unstructured); ok && u.GetKind() == "Object" {
			cluster, _, _ = unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
			m, _, _ = unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
		}
		u := &unstructured.Unstructured{Object: m}
		switch u.GetKind() {
		case "Namespace":
			v.Namespaces[cluster+"/"+u.GetName()] = u.GetAnnotations()
		case "RoleBinding":
			var rb rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &rb); err != nil {
				t.Fatal(err)
			}
			if rb.RoleRef.Kind == "ClusterRole" {
				v.Bindings[cluster+"/"+rb.Namespace+"/"+rb.Name] = rb.RoleRef.Name
			}
		}
	}
	return v
}

// TestJobNamespaces checks where the claim's own queues' jobs run: in
// job namespaces composed for them (by default <namespace>-jobs), in this
// cluster and each worker cluster, annotated for the admission policy,
// and the executors' and binoculars' job RoleBindings only there: never in
// the Armada's own namespace.
func TestJobNamespaces(t *testing.T) {
	queues := []v1alpha1.ArmadaQueue{
		{Name: "zeta", QueueParameters: armadav1.QueueParameters{PriorityFactor: "1"}},
		{Name: "alpha", QueueParameters: armadav1.QueueParameters{PriorityFactor: "1"}},
	}
	ann := func(queues string) map[string]string {
		return map[string]string{AnnotationArmada: "armada/armada", AnnotationQueues: queues, AnnotationOwner: "ArmadaClaim armada/armada"}
	}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   jobNamespaceView
	}{
		"Default": {
			reason: "One job namespace armada-jobs for the claim's queues (sorted); the RoleBindings there, none in namespace armada.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.Queues = queues }),
			want: jobNamespaceView{
				Namespaces: map[string]map[string]string{"/armada-jobs": ann("alpha,zeta")},
				Bindings: map[string]string{
					"/armada-jobs/armada:armada:armada-binoculars-jobs":     "armada-crossplane:binoculars-jobs",
					"/armada-jobs/armada:armada:armada-executor-local-jobs": "armada-crossplane:executor-jobs",
				},
			},
		},
		"Named": {
			reason: "spec.jobNamespaces names them; each gets the RoleBindings.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.JobNamespaces = []string{"batch-a", "batch-b"} }),
			want: jobNamespaceView{
				Namespaces: map[string]map[string]string{"/batch-a": ann(""), "/batch-b": ann("")},
				Bindings: map[string]string{
					"/batch-a/armada:armada:armada-binoculars-jobs":     "armada-crossplane:binoculars-jobs",
					"/batch-a/armada:armada:armada-executor-local-jobs": "armada-crossplane:executor-jobs",
					"/batch-b/armada:armada:armada-binoculars-jobs":     "armada-crossplane:binoculars-jobs",
					"/batch-b/armada:armada:armada-executor-local-jobs": "armada-crossplane:executor-jobs",
				},
			},
		},
		"WorkerClusters": {
			reason: "Each worker cluster gets the job namespace and its executors' RoleBindings there, not in its Armada namespace.",
			spec: func() v1alpha1.ArmadaSpec {
				s := remoteSpec()
				s.Executors = s.Executors[1:]
				return s
			}(),
			want: jobNamespaceView{
				Namespaces: map[string]map[string]string{
					"worker-a/armada-jobs": ann(""), "worker-g/armada-jobs": ann(""),
					// The executor's own, unannotated: no job runs there.
					"worker-a/armada": nil, "worker-g/armada": nil,
				},
				Bindings: map[string]string{
					"worker-a/armada-jobs/armada:armada:armada-executor-a-jobs": "armada:armada:armada-executor-jobs",
					"worker-g/armada-jobs/armada:armada:armada-executor-g-jobs": "armada:armada:armada-executor-jobs",
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderCase(t, 0, claimed(tc.spec), Options{Rand: KeyedRand([]byte("k"), "xr")})
			got := viewJobNamespaces(t, out.Objects)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\njob namespaces: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestJobNamespaceRefusals checks that the Armada's own namespace is never
// a job namespace, and that an existing namespace is never adopted.
func TestJobNamespaceRefusals(t *testing.T) {
	marked := func(mark string) metav1.Object {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "armada-jobs"}}
		if mark != "" {
			ns.Annotations = map[string]string{AnnotationOwner: mark}
		}
		return ns
	}
	cases := map[string]struct {
		reason   string
		spec     v1alpha1.ArmadaSpec
		existing map[string]metav1.Object
		composed []string
		want     field.ErrorList
	}{
		"OwnNamespace": {
			reason: "The Armada's own namespace holds its Secrets: refused, naming the field.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.JobNamespaces = []string{"jobs", "armada"} }),
			want:   field.ErrorList{field.Forbidden(field.NewPath("spec", "jobNamespaces").Index(1), "")},
		},
		"ExistingNotAdopted": {
			reason:   "A namespace that exists without this Armada's mark is refused.",
			spec:     spec(),
			existing: map[string]metav1.Object{"armada-jobs": marked("")},
			want:     field.ErrorList{field.Invalid(field.NewPath("spec", "jobNamespaces"), "armada-jobs", "")},
		},
		"AnotherOwner": {
			reason:   "A namespace another claim composed is refused.",
			spec:     spec(func(s *v1alpha1.ArmadaSpec) { s.JobNamespaces = []string{"armada-jobs"} }),
			existing: map[string]metav1.Object{"armada-jobs": marked("ArmadaQueueClaim team-a/ml")},
			want:     field.ErrorList{field.Invalid(field.NewPath("spec", "jobNamespaces").Index(0), "armada-jobs", "")},
		},
		"OwnMark": {
			reason:   "Its own namespace is its own.",
			spec:     spec(),
			existing: map[string]metav1.Object{"armada-jobs": marked("ArmadaClaim armada/armada")},
		},
		"AlreadyComposed": {
			reason:   "What the XR composed (observed) stays its own.",
			spec:     spec(),
			existing: map[string]metav1.Object{"armada-jobs": marked("")},
			composed: []string{"armada-jobs"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, errs := New(claimed(tc.spec))
			errs = append(errs, in.CheckJobNamespaces(tc.existing, tc.composed)...)
			if diff := cmp.Diff(tc.want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail")); diff != "" {
				t.Errorf("%s\nerrors: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
