package armada

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// SupportedVersions are the Armada releases this function renders, oldest
// first. The XRD's enum on spec.version must list the same values.
var SupportedVersions = []string{"0.22.6", "0.22.7"}

// DefaultVersion is the newest supported Armada release.
const DefaultVersion = "0.22.7"

// Defaults that are not per component. Each concern keeps its defaults here,
// in one place, so the override order (user's explicit setting, then our
// field, then these) is visible at a glance.
const (
	defaultPostgresPort    = 5432
	defaultPostgresSSLMode = "require"
	defaultSchedulerDB     = "scheduler"
	defaultLookoutDB       = "lookout"
	defaultRedisDB         = 1
	defaultPulsarTenant    = "public"
	defaultPulsarNamespace = "default"
	defaultAdminGroup      = "armada-admins"
	defaultOIDCGroupsClaim = "groups"
	defaultOIDCScope       = "openid email profile"
	defaultPoolName        = "default"
	defaultExecutorCluster = "local"
	defaultImageOrg        = "gresearch"

	// modeExternal is the only backing-service mode so far.
	modeExternal = "External"

	// Ports every component listens on. Armada's own defaults differ per
	// component (and the scheduler ingester's is random), so the function
	// sets them all explicitly.
	portGRPC    = 50051
	portHTTP    = 8080
	portMetrics = 9000

	// configDir is where a component's config Secret is mounted.
	configDir  = "/config"
	configKey  = "config.yaml"
	configPath = configDir + "/" + configKey

	// Pod identity of every Armada image (build/*/Dockerfile).
	runAsUser  = 1000
	runAsGroup = 2000
)

// defaultPriorityClasses are Armada's executor chart priority classes.
func defaultPriorityClasses() []v1alpha1.PriorityClass {
	return []v1alpha1.PriorityClass{
		{Name: "armada-default", Priority: 1000},
		{Name: "armada-preemptible", Priority: 900, Preemptible: true},
	}
}

// defaultResources are what Armada's charts and operator use for every
// long-running component.
func defaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("200m"),
			corev1.ResourceMemory: resource.MustParse("512Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("300m"),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		},
	}
}

// migrationResources are what Armada's migration charts use.
func migrationResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("200m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		},
	}
}

// applyDefaults fills every field the user left empty. It never overwrites
// a value the user set.
func applyDefaults(s *v1alpha1.ArmadaSpec) {
	if s.Version == "" {
		s.Version = DefaultVersion
	}
	if s.Postgres.Mode == "" {
		s.Postgres.Mode = modeExternal
	}
	if s.Postgres.Port == 0 {
		s.Postgres.Port = defaultPostgresPort
	}
	if s.Postgres.SSLMode == "" {
		s.Postgres.SSLMode = defaultPostgresSSLMode
	}
	if s.Postgres.Databases.Scheduler == "" {
		s.Postgres.Databases.Scheduler = defaultSchedulerDB
	}
	if s.Postgres.Databases.Lookout == "" {
		s.Postgres.Databases.Lookout = defaultLookoutDB
	}
	if s.Redis.Mode == "" {
		s.Redis.Mode = modeExternal
	}
	if s.Redis.DB == nil {
		db := int32(defaultRedisDB)
		s.Redis.DB = &db
	}
	if s.Pulsar.Mode == "" {
		s.Pulsar.Mode = modeExternal
	}
	if s.Pulsar.Tenant == "" {
		s.Pulsar.Tenant = defaultPulsarTenant
	}
	if s.Pulsar.Namespace == "" {
		s.Pulsar.Namespace = defaultPulsarNamespace
	}
	if len(s.Auth.AdminGroups) == 0 {
		s.Auth.AdminGroups = []string{defaultAdminGroup}
	}
	if o := s.Auth.OIDC; o != nil {
		if o.GroupsClaim == "" {
			o.GroupsClaim = defaultOIDCGroupsClaim
		}
		if o.Scope == "" {
			o.Scope = defaultOIDCScope
		}
	}
	if len(s.Scheduling.Pools) == 0 {
		s.Scheduling.Pools = []v1alpha1.Pool{{Name: defaultPoolName}}
	}
	if len(s.Scheduling.PriorityClasses) == 0 {
		s.Scheduling.PriorityClasses = defaultPriorityClasses()
	}
	if s.Scheduling.DefaultPriorityClass == "" {
		s.Scheduling.DefaultPriorityClass = s.Scheduling.PriorityClasses[0].Name
	}
	if len(s.Executors) == 0 {
		s.Executors = []v1alpha1.Executor{{ClusterID: defaultExecutorCluster}}
	}
	for i := range s.Executors {
		if s.Executors[i].Pool == "" {
			s.Executors[i].Pool = s.Scheduling.Pools[0].Name
		}
	}
}

// resources is the user's resources, or the default.
func resources(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	if r == nil {
		return defaultResources()
	}
	return *r
}
