package tenancy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// builtin and named are how refusals name the policy.
const (
	builtin = `the built-in tenancy policy (there is no ArmadaTenancyPolicy named after the namespace or "default")`
	named   = `ArmadaTenancyPolicy "team-a"`
)

// spec is a defaulted spec with every backing service external.
func spec(mutate ...func(*v1alpha1.ArmadaSpec)) *v1alpha1.ArmadaSpec {
	s := &v1alpha1.ArmadaSpec{
		Postgres:        v1alpha1.Postgres{Mode: "External"},
		Redis:           v1alpha1.Redis{Mode: "External"},
		Pulsar:          v1alpha1.Pulsar{Mode: "External"},
		ProviderConfigs: v1alpha1.ProviderConfigs{Kubernetes: "default", Helm: "default"},
		Scheduling: v1alpha1.Scheduling{PriorityClasses: []v1alpha1.PriorityClass{
			{Name: "armada-default", Priority: 1000}, {Name: "armada-preemptible", Priority: 900},
		}},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func raw(json string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(json)} }

func policy(mutate func(*tenancyv1.TenancyPolicySpec)) Policy {
	p := Policy{Name: "team-a"}
	mutate(&p.Spec)
	return p
}

func TestCheckArmada(t *testing.T) {
	worker := func(kind, name string) func(*v1alpha1.ArmadaSpec) {
		return func(s *v1alpha1.ArmadaSpec) {
			s.Executors = []v1alpha1.Executor{{ClusterID: "local"}, {ClusterID: "w", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Kind: kind, Name: name}}}}
		}
	}
	cases := map[string]struct {
		reason  string
		policy  Policy
		armada  Armada
		written *v1alpha1.ArmadaSpec
		want    []string
	}{
		"OwnNamespaceOnly": {
			reason: "An Armada naming nothing outside its namespace passes the built-in policy.",
			armada: Armada{Spec: spec()},
		},
		"InClusterDefaultConfigs": {
			reason: "In-cluster PostgreSQL and Pulsar through the \"default\" ClusterProviderConfigs pass the built-in policy.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.Mode, s.Pulsar.Mode = "InCluster", "InCluster" })},
		},
		"KubernetesConfigRefused": {
			reason: "spec.providerConfigs.kubernetes naming another ClusterProviderConfig is refused when in-cluster PostgreSQL uses it.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.Mode, s.ProviderConfigs.Kubernetes = "InCluster", "admin" })},
			want:   []string{`spec.providerConfigs.kubernetes: Forbidden: ClusterProviderConfig "admin": not allowed by ` + builtin + ` spec.providerConfigs.kubernetes`},
		},
		"KubernetesConfigUnused": {
			reason: "A config no composed object uses is not checked: with external PostgreSQL nothing goes through it.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.ProviderConfigs.Kubernetes = "admin" })},
		},
		"HelmConfigRefused": {
			reason: "spec.providerConfigs.helm naming another ClusterProviderConfig is refused when in-cluster Pulsar uses it.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.Pulsar.Mode, s.ProviderConfigs.Helm = "InCluster", "other-cluster" })},
			want:   []string{`spec.providerConfigs.helm: Forbidden: ClusterProviderConfig "other-cluster": not allowed by ` + builtin + ` spec.providerConfigs.helm`},
		},
		"HelmConfigAllowed": {
			reason: "A policy listing the Helm config allows it.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ProviderConfigs.Helm = []string{"other-cluster"} }),
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) { s.Pulsar.Mode, s.ProviderConfigs.Helm = "InCluster", "other-cluster" })},
		},
		"ClusterScopeRefused": {
			reason: "A namespaced Armada's spec.clusterScope config is refused unless listed.",
			armada: Armada{Spec: spec(), ClusterScope: &v1alpha1.ProviderConfigRef{Kind: "ClusterProviderConfig", Name: "in-cluster"}},
			want:   []string{`spec.clusterScope.providerConfigRef: Forbidden: ClusterProviderConfig "in-cluster": not allowed by ` + builtin + ` spec.providerConfigs.clusterScope`},
		},
		"ClusterScopeKindMatters": {
			reason: "A listed ClusterProviderConfig does not allow a ProviderConfig of the same name.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) {
				p.ProviderConfigs.ClusterScope = []tenancyv1.ConfigRef{{Name: "in-cluster"}}
			}),
			armada: Armada{Spec: spec(), ClusterScope: &v1alpha1.ProviderConfigRef{Kind: "ProviderConfig", Name: "in-cluster"}},
			want:   []string{`spec.clusterScope.providerConfigRef: Forbidden: ProviderConfig "in-cluster": not allowed by ` + named + ` spec.providerConfigs.clusterScope`},
		},
		"ClusterScopeAllowed": {
			reason: "A listed config (kind defaulted on both sides) is allowed.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) {
				p.ProviderConfigs.ClusterScope = []tenancyv1.ConfigRef{{Name: "in-cluster"}}
			}),
			armada: Armada{Spec: spec(), ClusterScope: &v1alpha1.ProviderConfigRef{Name: "in-cluster"}},
		},
		"WorkerClusterRefused": {
			reason: "An executor in a worker cluster the policy does not list is refused, naming its index.",
			armada: Armada{Spec: spec(worker("ClusterProviderConfig", "prod-cluster"))},
			want:   []string{`spec.executors[1].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "prod-cluster": not allowed by ` + builtin + ` spec.providerConfigs.workerClusters`},
		},
		"WorkerClusterAllowed": {
			reason: "A listed worker cluster is allowed.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) {
				p.ProviderConfigs.WorkerClusters = []tenancyv1.ConfigRef{{Kind: "ClusterProviderConfig", Name: "prod-cluster"}}
			}),
			armada: Armada{Spec: spec(worker("", "prod-cluster"))},
		},
		"ImageRegistryRefused": {
			reason: "spec.imageRegistry is refused unless the policy lists it.",
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "evil.example.com/x" })},
			want:   []string{`spec.imageRegistry: Forbidden: "evil.example.com/x" is not from an allowed registry: not allowed by ` + builtin + ` spec.imageRegistries`},
		},
		"ImageRegistryUnderAllowed": {
			reason: "A registry path under an allowed one is allowed; a trailing slash is ignored.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"registry.example.com/mirror"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "registry.example.com/mirror/armada/" })},
		},
		"ImageRegistryBareHost": {
			reason: "A bare registry host is allowed by an entry naming that host.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"registry.example.com:5000"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "registry.example.com:5000" })},
		},
		"ImageRegistryDockerHubUser": {
			reason: "A registry without a host part is a Docker Hub account: allowed only under docker.io.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"mirror"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "mirror" })},
			want:   []string{`spec.imageRegistry: Forbidden: "mirror" is not from an allowed registry: not allowed by ` + named + ` spec.imageRegistries`},
		},
		"ImageRegistryPrefixIsNotAPath": {
			reason: "An allowed registry does not allow another host that merely starts with its name.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"registry.example.com"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "registry.example.com.evil.io" })},
			want:   []string{`spec.imageRegistry: Forbidden: "registry.example.com.evil.io" is not from an allowed registry: not allowed by ` + named + ` spec.imageRegistries`},
		},
		"ImageOverridesRefused": {
			reason: "A component's image, the in-cluster PostgreSQL image and Redis image are the tenant's choice of registry too; Docker Hub is docker.io.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"ghcr.io"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.Server.Image = &v1alpha1.Image{Repository: "someone/armada-server"}
				s.Components.Executor.Image = &v1alpha1.Image{Repository: "ghcr.io/armada/executor"}
				s.Postgres.InCluster = &v1alpha1.PostgresInCluster{ImageName: "quay.io/pg/postgres:18"}
				s.Redis.InCluster = &v1alpha1.RedisInCluster{Image: "redis:7"}
			})},
			want: []string{
				`spec.components.server.image.repository: Forbidden: "someone/armada-server" is not from an allowed registry: not allowed by ` + named + ` spec.imageRegistries`,
				`spec.postgres.inCluster.imageName: Forbidden: "quay.io/pg/postgres:18" is not from an allowed registry: not allowed by ` + named + ` spec.imageRegistries`,
				`spec.redis.inCluster.image: Forbidden: "redis:7" is not from an allowed registry: not allowed by ` + named + ` spec.imageRegistries`,
			},
		},
		"DockerHubAllowed": {
			reason: "Listing docker.io allows images without a registry host.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.ImageRegistries = []string{"docker.io"} }),
			armada: Armada{Spec: spec(), Written: spec(func(s *v1alpha1.ArmadaSpec) { s.Redis.InCluster = &v1alpha1.RedisInCluster{Image: "redis:7"} })},
		},
		"PriorityOverCeiling": {
			reason: "A PriorityClass value over the built-in ceiling is refused, naming the class's index.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Scheduling.PriorityClasses = append(s.Scheduling.PriorityClasses, v1alpha1.PriorityClass{Name: "urgent", Priority: 1000000000})
			})},
			want: []string{`spec.scheduling.priorityClasses[2].priority: Invalid value: 1000000000: above the ceiling 100000: not allowed by ` + builtin + ` spec.maxPriority`},
		},
		"PriorityAtCeiling": {
			reason: "A value equal to the policy's ceiling is allowed.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.MaxPriority = ptr.To[int32](5000) }),
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Scheduling.PriorityClasses = append(s.Scheduling.PriorityClasses, v1alpha1.PriorityClass{Name: "urgent", Priority: 5000})
			})},
		},
		"PulsarValuesRefused": {
			reason: "Each Helm value path outside the allowlist is refused; allowed paths and everything under them pass.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.PulsarValues = []string{"broker.resources"} }),
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Pulsar.Mode = "InCluster"
				s.Pulsar.InCluster = &v1alpha1.PulsarInCluster{Values: raw(`{"broker": {"resources": {"requests": {"cpu": "1"}}, "resourcesX": 1},
					"proxy": {"service": {"type": "LoadBalancer"}}, "images": {}}`)}
			})},
			want: []string{
				`spec.pulsar.inCluster.values.broker.resourcesX: Forbidden: this Helm value path is not in the allowlist: not allowed by ` + named + ` spec.pulsarValues`,
				`spec.pulsar.inCluster.values.images: Forbidden: this Helm value path is not in the allowlist: not allowed by ` + named + ` spec.pulsarValues`,
				`spec.pulsar.inCluster.values.proxy.service.type: Forbidden: this Helm value path is not in the allowlist: not allowed by ` + named + ` spec.pulsarValues`,
			},
		},
		"PulsarValuesNoneAllowed": {
			reason: "The built-in policy allows no Pulsar values.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Pulsar.InCluster = &v1alpha1.PulsarInCluster{Values: raw(`{"broker": {"replicaCount": 3}}`)}
			})},
			want: []string{`spec.pulsar.inCluster.values.broker.replicaCount: Forbidden: this Helm value path is not in the allowlist: not allowed by ` + builtin + ` spec.pulsarValues`},
		},
		"AuthConfigRefused": {
			reason: "Config overrides setting basic-auth users, OIDC, anonymous access or permission mappings are refused, at any depth and any case.",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.Server.Config = raw(`{"auth": {"basicAuth": {"users": {"eve": {"password": "x", "groups": ["armada-admins"]}}}}, "submission": {"maxPodSpecSizeBytes": 1}}`)
				s.Components.Lookout.Config = raw(`{"uiConfig": {"oidcEnabled": false}}`)
				s.Components.Scheduler.Config = raw(`{"Auth": {"AnonymousAuth": true}}`)
				s.Executors = []v1alpha1.Executor{{ClusterID: "local", Config: raw(`{"kubernetes": {"impersonateUsers": true}}`)}}
			})},
			want: []string{
				`spec.components.lookout.config.uiConfig.oidcEnabled: Forbidden: a config override may not set authentication or authorisation; use spec.auth: not allowed by ` + builtin + ` spec.allowAuthConfig`,
				`spec.components.scheduler.config.Auth: Forbidden: a config override may not set authentication or authorisation; use spec.auth: not allowed by ` + builtin + ` spec.allowAuthConfig`,
				`spec.components.server.config.auth: Forbidden: a config override may not set authentication or authorisation; use spec.auth: not allowed by ` + builtin + ` spec.allowAuthConfig`,
				`spec.executors[0].config.kubernetes.impersonateUsers: Forbidden: a config override may not set authentication or authorisation; use spec.auth: not allowed by ` + builtin + ` spec.allowAuthConfig`,
			},
		},
		"AuthConfigAllowed": {
			reason: "allowAuthConfig: true lets overrides set auth.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.AllowAuthConfig = true }),
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.Server.Config = raw(`{"auth": {"anonymousAuth": true}}`)
			})},
		},
		"OtherConfigAllowed": {
			reason: "Overrides without auth keys pass (examples/production.yaml's).",
			armada: Armada{Spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Components.Scheduler.Config = raw(`{"scheduling": {"maximumSchedulingRate": 200.0}}`)
			})},
		},
		"ArmadaNotAllowedHere": {
			reason: "allowArmada: false refuses any Armada in the namespace.",
			policy: policy(func(p *tenancyv1.TenancyPolicySpec) { p.AllowArmada = ptr.To(false) }),
			armada: Armada{Namespace: "team-a", Spec: spec()},
			want:   []string{`metadata.namespace: Forbidden: namespace "team-a" may not hold an Armada: not allowed by ` + named + ` spec.allowArmada`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := []string{}
			for _, e := range tc.policy.CheckArmada(tc.armada) {
				got = append(got, e.Error())
			}
			if tc.want == nil {
				tc.want = []string{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheckArmada(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckTeamQueue(t *testing.T) {
	inCluster := &v1alpha1.ProviderConfigRef{Kind: "ClusterProviderConfig", Name: "in-cluster"}
	allowShared := policy(func(p *tenancyv1.TenancyPolicySpec) {
		p.QueueArmadas = []tenancyv1.ArmadaRef{{Namespace: "armada-prod", Name: "armada"}}
		p.ProviderConfigs.ClusterScope = []tenancyv1.ConfigRef{{Name: "in-cluster"}}
	})
	cases := map[string]struct {
		reason string
		policy Policy
		queue  TeamQueue
		want   []string
	}{
		"SameNamespace": {
			reason: "A queue on an Armada in its own namespace needs no policy.",
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "team-a", ArmadaName: "armada"},
		},
		"OtherNamespaceRefused": {
			reason: "A queue on an Armada in another namespace is refused unless the policy lists that Armada.",
			queue:  TeamQueue{Namespace: "team-x", ArmadaNamespace: "victim", ArmadaName: "armada"},
			want:   []string{`spec.armada: Forbidden: Armada victim/armada is in another namespace and does not allow team "team-x": not allowed by ` + builtin + ` spec.queueArmadas`},
		},
		"OtherNamespaceListed": {
			reason: "A listed Armada is allowed.",
			policy: allowShared,
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "armada-prod", ArmadaName: "armada"},
		},
		"OtherArmadaSameNamespace": {
			reason: "Listing one Armada does not allow another in the same namespace.",
			policy: allowShared,
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "armada-prod", ArmadaName: "other"},
			want:   []string{`spec.armada: Forbidden: Armada armada-prod/other is in another namespace and does not allow team "team-a": not allowed by ` + named + ` spec.queueArmadas`},
		},
		"OwnClusterScopeRefused": {
			reason: "The queue's own spec.clusterScope config must be allowed.",
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "team-a", ArmadaName: "armada", ClusterScope: inCluster},
			want:   []string{`spec.clusterScope.providerConfigRef: Forbidden: ClusterProviderConfig "in-cluster": not allowed by ` + builtin + ` spec.providerConfigs.clusterScope`},
		},
		"InheritedClusterScopeRefused": {
			reason: "The target Armada's config the queue would inherit must be allowed for the team too.",
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "team-a", ArmadaName: "armada", ClusterScope: inCluster, Inherited: true},
			want: []string{`spec.clusterScope.providerConfigRef: Forbidden: unset, so the queue would compose through the target Armada's ClusterProviderConfig "in-cluster": not allowed by ` +
				builtin + ` spec.providerConfigs.clusterScope`},
		},
		"InheritedClusterScopeAllowed": {
			reason: "An allowed inherited config passes.",
			policy: allowShared,
			queue:  TeamQueue{Namespace: "team-a", ArmadaNamespace: "armada-prod", ArmadaName: "armada", ClusterScope: inCluster, Inherited: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := []string{}
			for _, e := range tc.policy.CheckTeamQueue(tc.queue) {
				got = append(got, e.Error())
			}
			if tc.want == nil {
				tc.want = []string{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheckTeamQueue(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	pol := func(name string, ceiling int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"maxPriority": ceiling},
		}}
	}
	cases := map[string]struct {
		reason   string
		policies []*unstructured.Unstructured
		want     Policy
	}{
		"None": {
			reason: "Without policies the built-in default (an empty spec) applies.",
			want:   Policy{},
		},
		"Default": {
			reason:   "The default policy governs a namespace without its own.",
			policies: []*unstructured.Unstructured{pol("default", 7), pol("team-b", 8)},
			want:     Policy{Name: "default", Spec: tenancyv1.TenancyPolicySpec{MaxPriority: ptr.To[int32](7)}},
		},
		"Own": {
			reason:   "The namespace's own policy wins over default, whatever the order.",
			policies: []*unstructured.Unstructured{pol("team-a", 9), pol("default", 7)},
			want:     Policy{Name: "team-a", Spec: tenancyv1.TenancyPolicySpec{MaxPriority: ptr.To[int32](9)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Select("team-a", tc.policies)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nSelect(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
