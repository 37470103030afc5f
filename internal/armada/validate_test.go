package armada

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// spec returns a valid minimal spec with modifications applied.
func spec(mods ...func(*v1alpha1.ArmadaSpec)) v1alpha1.ArmadaSpec {
	s := v1alpha1.ArmadaSpec{
		Postgres: v1alpha1.Postgres{
			Host: "pg", User: "armada", SSLMode: "disable",
			PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "pg", Key: "password"},
		},
		Redis:  v1alpha1.Redis{Addrs: []string{"redis:6379"}},
		Pulsar: v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
		Auth:   v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin", Groups: []string{"armada-admins"}}}},
	}
	for _, m := range mods {
		m(&s)
	}
	return s
}

// claimed is an XR created from a claim armada/armada.
func claimed(s v1alpha1.ArmadaSpec) XR {
	return XR{Name: "armada-x7k2p", Labels: map[string]string{xcrd.LabelKeyClaimName: "armada", xcrd.LabelKeyClaimNamespace: "armada"}, Spec: s}
}

func TestNew(t *testing.T) {
	type want struct {
		name, namespace string
		errs            field.ErrorList
	}
	cases := map[string]struct {
		reason string
		xr     XR
		want   want
	}{
		"ValidClaim": {
			reason: "A claim names the install and provides its namespace.",
			xr:     claimed(spec()),
			want:   want{name: "armada", namespace: "armada"},
		},
		"ClaimNamespaceElsewhereRefused": {
			reason: "A claim composes into its own namespace only: spec.namespace naming another is refused, and the install stays in the claim's.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Namespace = "victim" })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Forbidden(field.NewPath("spec", "namespace"), "")}},
		},
		"ClaimNamespaceItsOwn": {
			reason: "A claim may name its own namespace.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Namespace = "armada" })),
			want:   want{name: "armada", namespace: "armada"},
		},
		"DirectXRChoosesNamespace": {
			reason: "An XR the platform creates without a claim chooses its namespace.",
			xr:     XR{Name: "direct", Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.Namespace = "elsewhere" })},
			want:   want{name: "direct", namespace: "elsewhere"},
		},
		"DirectXRNeedsNamespace": {
			reason: "An XR created without a claim must say where to install.",
			xr:     XR{Name: "direct", Spec: spec()},
			want:   want{name: "direct", errs: field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")}},
		},
		"UnsupportedVersion": {
			reason: "Only versions the function knows are rendered.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Version = "0.21.0" })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.NotSupported[string](field.NewPath("spec", "version"), "0.21.0", nil)}},
		},
		"ImageRegistrySyntax": {
			reason: "spec.imageRegistry must be a registry host, port and path: a space is refused even without the XRD's pattern.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "evil.example.com/x y" })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "imageRegistry"), "evil.example.com/x y", "")}},
		},
		"NoAuthMethod": {
			reason: "Anonymous access is never a default.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Auth = v1alpha1.Auth{} })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Required(field.NewPath("spec", "auth"), "")}},
		},
		"MissingCredentials": {
			reason: "A Postgres password must come from a Secret.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.PasswordSecretRef = &v1alpha1.SecretKeyRef{} })),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{
				field.Required(field.NewPath("spec", "postgres", "passwordSecretRef", "name"), ""),
				field.Required(field.NewPath("spec", "postgres", "passwordSecretRef", "key"), ""),
			}},
		},
		"DuplicatePools": {
			reason: "Pool names are unique.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Scheduling.Pools = []v1alpha1.Pool{{Name: "a"}, {Name: "a"}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Duplicate(field.NewPath("spec", "scheduling", "pools").Index(1).Child("name"), "a")}},
		},
		"ExecutorPoolNotScheduled": {
			reason: "An executor's pool the scheduler does not know would silently never get jobs.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "c1", Pool: "gpu"}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "executors").Index(0).Child("pool"), "gpu", "")}},
		},
		"DuplicateExecutors": {
			reason: "Cluster ids identify executors and must be unique.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "c1"}, {ClusterID: "c1"}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Duplicate(field.NewPath("spec", "executors").Index(1).Child("clusterId"), "c1")}},
		},
		"DefaultPriorityClassUnknown": {
			reason: "The default priority class must be one of the configured ones.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Scheduling.DefaultPriorityClass = "nope"
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "scheduling", "defaultPriorityClass"), "nope", "")}},
		},
		"ExecutorReplicas": {
			reason: "An executor runs exactly one replica.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.Executor.Replicas = ptr.To[int32](2)
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "components", "executor", "replicas"), int32(2), "")}},
		},
		"ConfigNotAnObject": {
			reason: "Free-form config must be a map of Armada keys.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.SchedulerIngester.Config = &runtime.RawExtension{Raw: []byte(`"oops"`)}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "components", "schedulerIngester", "config"), "", "")}},
		},
		"BadRedisAddress": {
			reason: "Redis addresses need a port.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Redis.Addrs = []string{"redis"} })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "redis", "addrs").Index(0), "redis", "")}},
		},
		"QueueLimitForUnknownClass": {
			reason: "A queue's limit must name one of this Armada's priority classes, or it limits nothing.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Queues = []v1alpha1.ArmadaQueue{{Name: "q", QueueParameters: armadav1.QueueParameters{
					PriorityFactor: "1",
					ResourceLimitsByPriorityClassName: map[string]armadav1.PriorityClassResourceLimits{
						"armada-default": {MaximumResourceFraction: map[string]armadav1.Fraction{"cpu": "0.5"}},
					},
				}}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{
				field.NotSupported(field.NewPath("spec", "queues").Index(0).Child("resourceLimitsByPriorityClassName").Key("armada-default"), "armada-default", []string(nil)),
			}},
		},
		"BadNodeTaint": {
			reason: "A node taint must be a valid taint key and value, named by field.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "a", NodeTaint: &v1alpha1.NodeTaint{Key: "bad key", Value: "not ok!"}}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{
				field.Invalid(field.NewPath("spec", "executors").Index(0).Child("nodeTaint", "key"), "", ""),
				field.Invalid(field.NewPath("spec", "executors").Index(0).Child("nodeTaint", "value"), "", ""),
			}},
		},
		"RemoteExecutorWithoutExecutorAPI": {
			reason: "An executor in another cluster needs a reachable executor API.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "a", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Name: "w"}}}}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Required(field.NewPath("spec", "executorApi", "url"), "")}},
		},
		"ImageRegistryWithSpace": {
			reason: "A registry with a space would compose an invalid image reference into every pod.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "evil.example.com/x y" })),
			want:   want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "imageRegistry"), "", "")}},
		},
		"ImageRegistryWithPortAndPath": {
			reason: "A host with a port and a repository path, with a trailing slash, is a valid prefix.",
			xr:     claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "localhost:5000/mirror/armada/" })),
			want:   want{name: "armada", namespace: "armada"},
		},
		"ComposedServiceNameTooLong": {
			reason: "A 30-character name and a 40-character clusterId would compose an 80-character executor Service.",
			xr: XR{Name: "x", Labels: map[string]string{xcrd.LabelKeyClaimName: strings.Repeat("a", 30), xcrd.LabelKeyClaimNamespace: "armada"}, Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Executors = []v1alpha1.Executor{{ClusterID: strings.Repeat("c", 23)}, {ClusterID: strings.Repeat("c", 24)}}
			})},
			want: want{name: strings.Repeat("a", 30), namespace: "armada", errs: field.ErrorList{
				field.TooLong(field.NewPath("spec", "executors").Index(1).Child("clusterId"), "", 23),
			}},
		},
		"IngressHostsCollide": {
			reason: "REST and Lookout are served on different hosts.",
			xr: claimed(spec(func(s *v1alpha1.ArmadaSpec) {
				s.Ingress = &v1alpha1.Ingress{GRPCHost: "g.example.com", RESTHost: "a.example.com", LookoutHost: "a.example.com"}
			})),
			want: want{name: "armada", namespace: "armada", errs: field.ErrorList{field.Invalid(field.NewPath("spec", "ingress", "restHost"), "a.example.com", "")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, errs := New(tc.xr)
			got := want{name: in.Name, namespace: in.Namespace, errs: errs}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}),
				cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail", "Origin", "CoveredByDeclarative"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNewDoesNotModifyInput(t *testing.T) {
	xr := claimed(spec())
	before := xr.Spec.DeepCopy()
	_, _ = New(xr)
	if diff := cmp.Diff(before, &xr.Spec); diff != "" {
		t.Errorf("New(...) modified the XR's spec: -before, +after:\n%s", diff)
	}
}
