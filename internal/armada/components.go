package armada

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Armada's two databases, which name their migrations too.
const (
	dbLookout   = "lookout"
	dbScheduler = "scheduler"
)

// componentServer is the server's row name, which provider-armada's
// link and the queue's provider config name too.
const componentServer = "server"

// keyMetricsPort is the metrics port key of most components' configs.
const keyMetricsPort = "metricsPort"

// probeKind says how a component's health is checked.
type probeKind int

const (
	// probeHTTP is GET /health on the http port.
	probeHTTP probeKind = iota
	// probeTCP connects to the metrics port; ingesters have no health API.
	probeTCP
)

// authScope says which users a component's API accepts.
type authScope int

const (
	// authNone components serve no authenticated API.
	authNone authScope = iota
	// authInternal components serve only other components.
	authInternal
	// authUsers components serve users and components.
	authUsers
)

// A link is an authenticated gRPC client connection to another component.
type link struct {
	// Key is the connection block's config key.
	Key string
	// Target is the component it connects to.
	Target string
	// User is the internal user it authenticates as.
	User string
}

// A component is one row of the table that drives everything composed for
// Armada's control plane. The three ingesters, for example, are three rows
// rendered by the same code.
type component struct {
	// Name is the component's name in object names, labels and status.
	Name string
	// Image is the image name without org and tag.
	Image string
	// Args run the component given its config file path.
	Args []string
	// GRPC and HTTP say which ports, besides metrics, it serves.
	GRPC, HTTP bool
	// Probe is how its liveness and readiness are checked.
	Probe probeKind
	// Database is the database it uses, if any: "scheduler" or "lookout".
	Database string
	// Migration is the migration that must complete before it starts.
	Migration string
	// RedisKey is the config key of its Redis block, if it uses Redis.
	RedisKey string
	// Pulsar components get the Pulsar block and its credentials.
	Pulsar bool
	// ControlPlaneTopic components also use the control-plane topic.
	ControlPlaneTopic bool
	// Auth is which basic-auth users its API accepts.
	Auth authScope
	// Clients are its authenticated gRPC links to other components.
	Clients []link
	// KubeAPI components get a ServiceAccount token.
	KubeAPI bool
	// ClusterRules are granted cluster-wide to its ServiceAccount, through
	// the fixed ClusterRole FixedClusterRoles ships (in a worker cluster,
	// a ClusterRole of the install's own; see remote.go). Only reads that
	// Armada makes cluster-wide belong here (docs/dev/rbac.md).
	ClusterRules []rbacv1.PolicyRule
	// JobRules are granted in each of the Armada's job namespaces only,
	// through RoleBindings there to the fixed ClusterRole
	// FixedJobRoleName names (rbac.go): every write Armada makes.
	JobRules []rbacv1.PolicyRule
	// PerExecutor rows are rendered once per spec.executors entry.
	PerExecutor bool
	// LeaderElected rows run as a StatefulSet with a headless Service and,
	// with more than one replica, Kubernetes leader election.
	LeaderElected bool
	// MaxReplicas caps replicas; 0 means no cap.
	MaxReplicas int32
	// Metrics is the config key path of its metrics port, which differs
	// per component (Armada v0.22.7's configuration structs).
	Metrics []string
	// TLS is the config key path of its TLS block ({enabled, certPath,
	// keyPath}), if it serves TLS under spec.tls: the gRPC server's for
	// the server and scheduler (Armada's server serves its HTTP port with
	// the same certificate).
	TLS []string
	// TLSHTTP components serve their HTTP port (and its /health) with
	// TLS when they have a TLS block on, or a TLS proxy.
	TLSHTTP bool
	// TLSProxy components serve their gRPC and HTTP ports through a
	// TLS-terminating sidecar (tlsproxy.go) under spec.tls, with their
	// own certificate (each row says why its own TLS will not do).
	// Binoculars has a gRPC TLS block, but in Armada
	// v0.22.x its HTTP port, which users and the Lookout UI call, is
	// always plain HTTP and its REST gateway dials its own gRPC port in
	// plaintext (cmd/binoculars/main.go: common.ServeHttp,
	// CreateGatewayHandler(..., ssl=false)): turning the block on would
	// break that API and still not encrypt it.
	TLSProxy bool
	// IngesterMetrics is the prefix of an ingester's metrics
	// (internal/common/ingest/metrics); ingesters also get Pulsar's delay
	// monitor when monitoring measures their lag.
	IngesterMetrics string
	// Settings selects the user's settings for it from spec.components.
	Settings func(*v1alpha1.Components) *v1alpha1.Component
	// Config builds its generated Armada config.
	Config func(*Install, *instance) map[string]any
	// ConfigType is the Go type Armada decodes its config into (package
	// path under github.com/armadaproject/armada, then the type's name):
	// internal/build/cmd/armadakeys reads the config keys it has from it.
	ConfigType string
}

// components is the table of Armada's components, in dependency order.
var components = []component{
	{
		Name: componentServer, Image: "armada-server", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort},
		GRPC:    true, HTTP: true, Probe: probeHTTP, Auth: authUsers,
		Database: dbLookout, Migration: dbLookout, RedisKey: "eventsApiRedis", Pulsar: true, ControlPlaneTopic: true,
		Clients: []link{{Key: "schedulerApiConnection", Target: "scheduler", User: userServer}},
		TLS:     []string{"grpc", "tls"}, TLSHTTP: true,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.Server },
		Config:     serverConfig,
		ConfigType: "internal/server/configuration.ArmadaConfig",
	},
	{
		Name: "scheduler", Image: "armada-scheduler", Args: []string{"run", "--config", configPath},
		Metrics: []string{"metrics", "port"},
		GRPC:    true, HTTP: true, Probe: probeHTTP, Auth: authInternal,
		Database: dbScheduler, Migration: dbScheduler, Pulsar: true,
		KubeAPI: true, LeaderElected: true,
		Clients:    []link{{Key: "armadaApi", Target: componentServer, User: userScheduler}},
		TLS:        []string{"grpc", "tls"},
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.Scheduler },
		Config:     schedulerConfig,
		ConfigType: "internal/scheduler/configuration.Configuration",
	},
	{
		Name: "scheduler-ingester", Image: "armada-scheduler-ingester", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort}, IngesterMetrics: "armada_event_ingester_armada_scheduler_ingester_",
		Probe: probeTCP, Database: dbScheduler, Migration: dbScheduler, Pulsar: true, ControlPlaneTopic: true,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.SchedulerIngester },
		Config:     ingesterConfig,
		ConfigType: "internal/scheduleringester.Configuration",
	},
	{
		Name: "lookout", Image: "armada-lookout", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort},
		HTTP:    true, Probe: probeHTTP, Auth: authUsers, Database: dbLookout, Migration: dbLookout,
		// Lookout has a TLS block, but in Armada v0.22.x its server
		// (internal/lookout/application.go) builds restapi.NewServer
		// without the flag defaults, so TLS keep-alive is 0: Go's HTTP/2
		// server, which that TLS listener offers, then closes each
		// connection as soon as no stream is open, and a browser loses
		// the requests it has already sent on it. The TLS proxy serves
		// HTTP/1.1 only (no ALPN), which browsers keep and retry.
		TLSProxy: true, TLSHTTP: true,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.Lookout },
		Config:     lookoutConfig,
		ConfigType: "internal/lookout/configuration.LookoutConfig",
	},
	{
		Name: "lookout-ingester", Image: "armada-lookout-ingester", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort}, IngesterMetrics: "armada_lookout_ingester_v2_",
		Probe: probeTCP, Database: dbLookout, Migration: dbLookout, Pulsar: true,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.LookoutIngester },
		Config:     ingesterConfig,
		ConfigType: "internal/lookoutingester/configuration.LookoutIngesterConfiguration",
	},
	{
		Name: "event-ingester", Image: "armada-event-ingester", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort}, IngesterMetrics: "armada_event_ingester_",
		Probe: probeTCP, RedisKey: "redis", Pulsar: true,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.EventIngester },
		Config:     ingesterConfig,
		ConfigType: "internal/eventingester/configuration.EventIngesterConfiguration",
	},
	{
		Name: "binoculars", Image: "armada-binoculars", Args: []string{"--config", configPath},
		Metrics: []string{keyMetricsPort},
		GRPC:    true, HTTP: true, Probe: probeHTTP, Auth: authUsers, KubeAPI: true,
		TLSProxy: true, TLSHTTP: true,
		JobRules:   binocularsJobRules,
		Settings:   func(c *v1alpha1.Components) *v1alpha1.Component { return &c.Binoculars },
		Config:     binocularsConfig,
		ConfigType: "internal/binoculars/configuration.BinocularsConfig",
	},
	{
		Name: "executor", Image: "armada-executor", Args: []string{"--config", configPath},
		Metrics: []string{"metric", "port"},
		HTTP:    true, Probe: probeHTTP, KubeAPI: true, PerExecutor: true, MaxReplicas: 1,
		ClusterRules: executorRules,
		JobRules:     executorJobRules,
		Clients:      []link{{Key: "executorApiConnection", Target: "scheduler", User: userExecutor}},
		Settings:     func(c *v1alpha1.Components) *v1alpha1.Component { return &c.Executor },
		Config:       executorConfig,
		ConfigType:   "internal/executor/configuration.ExecutorConfiguration",
	},
}

// executorRules are the executor's cluster-wide reads. Armada's executor
// (v0.22.x internal/executor/context/cluster_context.go) runs one shared
// informer factory with no namespace for pods, nodes, events, services,
// ingresses and endpointslices, and waits for all of them to sync before
// it starts: it needs get, list and watch on each in every namespace.
// Armada's chart grants much more (every write cluster-wide, impersonation
// of any user and group, serviceaccounts/token, tokenreviews and
// nodes/proxy); docs/dev/rbac.md says why each is left out.
var executorRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "events", "services", "nodes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
}

// executorJobRules are the executor's writes, each in the namespace of the
// job it runs (cluster_context.go: SubmitPod, AddAnnotation,
// DeletePodWithCondition, SubmitService, SubmitIngress, DeleteService,
// DeleteIngress).
var executorJobRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create", "delete"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"create", "delete"}},
}

// binocularsJobRules let binoculars read a job's logs
// (internal/binoculars/service/logs.go: Pods(ns).GetLogs). It needs
// nothing cluster-wide: its cordon API patches nodes, which this
// function does not grant (docs/guides/least-privilege.md), and it
// impersonates only with impersonateUsers, which is refused.
var binocularsJobRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
}

// An instance is one rendered copy of a component: one per component, and
// one per executor for per-executor rows.
type instance struct {
	*component
	// Name is unique across instances: the component name, or
	// executor-<clusterId>.
	Name string
	// Executor is set for per-executor instances.
	Executor *v1alpha1.Executor
	// Settings are the user's settings, with an executor's own entry merged
	// over spec.components.executor.
	Settings v1alpha1.Component
}

// replicas is the instance's replica count: the user's, capped by the row.
func (i *instance) replicas() int32 {
	r := int32(1)
	if i.Settings.Replicas != nil {
		r = *i.Settings.Replicas
	}
	if i.MaxReplicas > 0 && r > i.MaxReplicas {
		r = i.MaxReplicas
	}
	return r
}

// userConfig is the user's config for the instance, lowest precedence
// first: the component's, then an executor's own.
func (i *instance) userConfig() []*runtime.RawExtension {
	out := []*runtime.RawExtension{i.Settings.Config}
	if i.Executor != nil {
		out = append(out, i.Executor.Config)
	}
	return out
}

// userConfigPath is the spec field of an instance's j-th userConfig.
func (in *Install) userConfigPath(i *instance, j int) *field.Path {
	if j == 0 {
		return field.NewPath("spec", "components", settingsField(i.component.Name), "config")
	}
	for n := range in.Spec.Executors {
		if &in.Spec.Executors[n] == i.Executor || in.Spec.Executors[n].ClusterID == i.Executor.ClusterID {
			return field.NewPath("spec", "executors").Index(n).Child("config")
		}
	}
	return field.NewPath("spec", "executors").Key(i.Executor.ClusterID).Child("config")
}

// instances lists every instance to render, in table order.
func instances(in *Install) []*instance {
	out := make([]*instance, 0, len(components)+len(in.Spec.Executors))
	for i := range components {
		c := &components[i]
		base := *c.Settings(&in.Spec.Components)
		if !c.PerExecutor {
			out = append(out, &instance{component: c, Name: c.Name, Settings: base})
			continue
		}
		for j := range in.Spec.Executors {
			e := &in.Spec.Executors[j]
			s := base
			if e.Resources != nil {
				s.Resources = e.Resources
			}
			if e.NodeSelector != nil {
				s.NodeSelector = e.NodeSelector
			}
			out = append(out, &instance{component: c, Name: c.Name + "-" + e.ClusterID, Executor: e, Settings: s})
		}
	}
	return out
}
