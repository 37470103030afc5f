package teamqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// target is a shared Armada "armada" in namespace "armada" with a
// platform-defined queue "batch".
// mods change its spec first.
func target(t *testing.T, mods ...func(*v1alpha1.ArmadaSpec)) *armada.Install {
	t.Helper()
	spec := v1alpha1.ArmadaSpec{
		Postgres: v1alpha1.Postgres{Host: "pg", User: "armada", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "pg", Key: "password"}},
		Redis:    v1alpha1.Redis{Addrs: []string{"redis:6379"}},
		Pulsar:   v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
		Auth:     v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin"}}},
		Queues:   []v1alpha1.ArmadaQueue{{Name: "batch", QueueParameters: armadav1.QueueParameters{PriorityFactor: "1"}}},
	}
	for _, m := range mods {
		m(&spec)
	}
	in, errs := armada.New(armada.XR{
		Name:   "armada-x1",
		Labels: map[string]string{"crossplane.io/claim-name": "armada", "crossplane.io/claim-namespace": "armada"},
		Spec:   spec,
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return in
}

func claim(mod func(*v1alpha1.ArmadaQueueSpec)) XR {
	xr := XR{
		Name:   "ml-x2",
		Labels: map[string]string{xcrd.LabelKeyClaimName: "ml", xcrd.LabelKeyClaimNamespace: "team-ml"},
		Spec: v1alpha1.ArmadaQueueSpec{
			Armada:      v1alpha1.ArmadaReference{Name: "armada", Namespace: "armada"},
			GroupOwners: []string{"team-ml"},
			Namespaces:  []string{"team-ml-jobs"},
			Quota:       map[string]v1alpha1.QueueQuota{"armada-armada-0abc57-default": {"cpu": "0.25"}},
		},
	}
	if mod != nil {
		mod(&xr.Spec)
	}
	return xr
}

func TestRender(t *testing.T) {
	type want struct {
		queue  *armadav1.QueueParameters
		keys   []string
		status v1alpha1.ArmadaQueueStatus
		errs   field.ErrorList
	}
	cases := map[string]struct {
		reason string
		xr     XR
		want   want
	}{
		"TeamQueue": {
			reason: "The queue is named after the claim, owned by the team's groups, with its quota as resource limits, in the target's namespace.",
			xr:     claim(nil),
			want: want{
				queue: &armadav1.QueueParameters{
					PriorityFactor: "1", GroupOwners: []string{"team-ml"},
					ResourceLimitsByPriorityClassName: map[string]armadav1.PriorityClassResourceLimits{
						"armada-armada-0abc57-default": {MaximumResourceFraction: map[string]armadav1.Fraction{"cpu": "0.25"}},
					},
				},
				keys: []string{
					KeyQueue, "namespace-team-ml-jobs", "namespace-team-ml-jobs-serviceaccount",
					"namespace-team-ml-jobs-binoculars-jobs", "namespace-team-ml-jobs-executor-local-jobs",
				},
				status: v1alpha1.ArmadaQueueStatus{
					Queue: "ml", Armada: "armada/armada", Endpoint: "armada-server.armada.svc:50051", Namespaces: []string{"team-ml-jobs"},
				},
			},
		},
		"PlatformQueueTaken": {
			reason: "A team cannot claim a queue the platform defines.",
			xr:     claim(func(s *v1alpha1.ArmadaQueueSpec) { s.QueueName = "batch" }),
			want:   want{errs: field.ErrorList{field.Invalid(field.NewPath("spec", "queueName"), "batch", "")}},
		},
		"UnknownPriorityClass": {
			reason: "Quota names only the target's priority classes.",
			xr:     claim(func(s *v1alpha1.ArmadaQueueSpec) { s.Quota = map[string]v1alpha1.QueueQuota{"gold": {"cpu": "0.5"}} }),
			want:   want{errs: field.ErrorList{field.NotSupported[string](field.NewPath("spec", "quota").Key("gold"), "gold", nil)}},
		},
		"FractionOutOfRange": {
			reason: "Quota fractions are between 0 and 1.",
			xr: claim(func(s *v1alpha1.ArmadaQueueSpec) {
				s.Quota = map[string]v1alpha1.QueueQuota{"armada-armada-0abc57-default": {"cpu": "1.5"}}
			}),
			want: want{errs: field.ErrorList{field.Invalid(field.NewPath("spec", "quota").Key("armada-armada-0abc57-default").Key("cpu"), "1.5", "")}},
		},
		"PriorityFactorBelowOne": {
			reason: "Armada rejects priority factors below 1.",
			xr:     claim(func(s *v1alpha1.ArmadaQueueSpec) { s.PriorityFactor = "0.5" }),
			want:   want{errs: field.ErrorList{field.Invalid(field.NewPath("spec", "priorityFactor"), "0.5", "")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errs := Render(tc.xr, target(t), tenancy.Policy{})
			if diff := cmp.Diff(tc.want.errs, errs, cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail")); diff != "" {
				t.Fatalf("%s\nRender(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if errs != nil {
				return
			}
			var keys []string
			for _, o := range out.Objects {
				keys = append(keys, o.Key)
			}
			if diff := cmp.Diff(tc.want.keys, keys); diff != "" {
				t.Errorf("%s\nkeys: -want, +got:\n%s", tc.reason, diff)
			}
			q := out.Objects[0].Object.(*armadav1.Queue)
			if diff := cmp.Diff(*tc.want.queue, q.Spec.ForProvider); diff != "" {
				t.Errorf("%s\nqueue: -want, +got:\n%s", tc.reason, diff)
			}
			if q.Namespace != "armada" || q.Annotations["crossplane.io/external-name"] != "ml" || q.Spec.ProviderConfigReference.Name != "armada-armada" {
				t.Errorf("%s\nqueue %s/%s (external name %q) uses ProviderConfig %q; want armada/…, ml, armada-armada",
					tc.reason, q.Namespace, q.Name, q.Annotations["crossplane.io/external-name"], q.Spec.ProviderConfigReference.Name)
			}
			ns := out.Objects[1].Object.(*corev1.Namespace)
			if ns.Labels[LabelQueue] != "ml" {
				t.Errorf("%s\nnamespace %s labels %v, want %s=ml", tc.reason, ns.Name, ns.Labels, LabelQueue)
			}
			// What the Armada's admission policy reads: only queue ml's
			// jobs of Armada armada/armada run there.
			wantAnn := map[string]string{armada.AnnotationArmada: "armada/armada", armada.AnnotationQueues: "ml", armada.AnnotationOwner: "ArmadaQueueClaim team-ml/ml"}
			if diff := cmp.Diff(wantAnn, ns.Annotations); diff != "" {
				t.Errorf("%s\nnamespace annotations: -want, +got:\n%s", tc.reason, diff)
			}
			sa := out.Objects[2].Object.(*corev1.ServiceAccount)
			if sa.Name != "default" || sa.Namespace != "team-ml-jobs" || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				t.Errorf("%s\nServiceAccount %s/%s automounts a token (%v); want team-ml-jobs/default with automountServiceAccountToken false",
					tc.reason, sa.Namespace, sa.Name, sa.AutomountServiceAccountToken)
			}
			if diff := cmp.Diff(tc.want.status, out.Status); diff != "" {
				t.Errorf("%s\nstatus: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNamespacesInWorkerClusters checks that a team's job namespaces are
// created in every worker cluster its Armada's executors run in, as
// provider-kubernetes Objects for that cluster, beside this cluster's, and
// that each remote executor is bound to its job rules there.
func TestNamespacesInWorkerClusters(t *testing.T) {
	in := target(t, func(s *v1alpha1.ArmadaSpec) {
		s.ExecutorAPI = &v1alpha1.ExecutorAPI{URL: "executors.example.com:443"}
		s.Executors = []v1alpha1.Executor{
			{ClusterID: "here"},
			{ClusterID: "a", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Name: "worker-a"}}},
			{ClusterID: "a2", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Name: "worker-a"}}},
			{ClusterID: "b", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Kind: "ProviderConfig", Name: "worker-b"}}},
		}
	})
	out, errs := Render(claim(nil), in, tenancy.Policy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := map[string]string{}
	for _, o := range out.Objects {
		u, ok := o.Object.(*unstructured.Unstructured)
		if !ok || u.GetKind() != "Object" {
			continue
		}
		name, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "manifest", "metadata", "name")
		pc, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
		got[o.Key] = pc + ":" + name
	}
	want := map[string]string{
		"cluster-worker-a-team-ml-namespace-team-ml-jobs":    "worker-a:team-ml-jobs",
		"cluster-pc-worker-b-team-ml-namespace-team-ml-jobs": "worker-b:team-ml-jobs",
		// Its default ServiceAccount, which mounts no token, too.
		"cluster-worker-a-team-ml-namespace-team-ml-jobs-serviceaccount":    "worker-a:default",
		"cluster-pc-worker-b-team-ml-namespace-team-ml-jobs-serviceaccount": "worker-b:default",
		// Each remote executor may work in it in its own cluster.
		"cluster-worker-a-namespace-team-ml-jobs-executor-a-jobs":    "worker-a:armada:armada:armada-executor-a-jobs",
		"cluster-worker-a-namespace-team-ml-jobs-executor-a2-jobs":   "worker-a:armada:armada:armada-executor-a2-jobs",
		"cluster-pc-worker-b-namespace-team-ml-jobs-executor-b-jobs": "worker-b:armada:armada:armada-executor-b-jobs",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("team namespaces in worker clusters: -want, +got:\n%s", diff)
	}
}
