package armada

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Defaults that are not per component. Each concern keeps its defaults here,
// in one place, so the override order (user's explicit setting, then our
// field, then these) is visible at a glance.
const (
	defaultPostgresPort     = 5432
	defaultPostgresSSLMode  = "require"
	defaultSchedulerDB      = "scheduler"
	defaultLookoutDB        = "lookout"
	defaultRedisDB          = 1
	defaultPulsarTenant     = "armada"
	defaultPulsarNamespace  = "armada"
	defaultEventsPartitions = 2
	defaultProviderConfig   = "default"
	defaultAdminGroup       = "armada-admins"
	defaultOIDCGroupsClaim  = "groups"
	defaultOIDCScope        = "openid email profile"
	defaultPoolName         = "default"
	defaultExecutorCluster  = "local"
	defaultImageOrg         = "gresearch"

	// Backing-service modes.
	modeExternal  = "External"
	modeInCluster = "InCluster"

	// Deletion policies of stateful resources.
	deletionOrphan = "Orphan"
	deletionDelete = "Delete"

	// Pulsar release profiles.
	pulsarProfileSmall = "Small"
	pulsarProfileHA    = "HA"

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

// Pinned versions of the in-cluster backing services. Each is what the
// project's examples and goldens are rendered with; see docs/guides/backing-services.md for why.
const (
	// cnpgImage is the operand image CloudNativePG v1.29.0 defaults to
	// (pkg/versions.DefaultImageName), pinned so that an operator upgrade
	// does not silently upgrade PostgreSQL.
	cnpgImage = "ghcr.io/cloudnative-pg/postgresql:18.3-system-trixie"
	// cnpgOwner owns Armada's databases in the in-cluster PostgreSQL; its
	// password is in the cluster's <name>-app Secret, which CloudNativePG
	// generates.
	cnpgOwner = "armada"
	// cnpgOperatorNamespace is where CloudNativePG's manifests and chart
	// install its operator.
	cnpgOperatorNamespace = "cnpg-system"

	// redisImage is the official Redis image (uid 999).
	redisImage    = "library/redis:7.4.2"
	redisUID      = 999
	redisPort     = 6379
	redisPassword = "internal-redis"

	// The Apache Pulsar Helm chart, and the image of its brokers,
	// bookies and ZooKeeper (the chart's defaultPulsarImageTag) and of the
	// topic-init Job: PulsarVersion, the release the tests run.
	pulsarChartRepository = "https://pulsar.apache.org/charts"
	pulsarChartName       = "pulsar"
	pulsarChartVersion    = "4.5.0"
	pulsarImage           = "apachepulsar/pulsar:" + PulsarVersion
	pulsarUID             = 10000
	pulsarAdminPort       = 8080
)

// Monitoring defaults (spec.monitoring).
const (
	// defaultScrapeInterval is what Armada's charts scrape at.
	defaultScrapeInterval = "15s"
	// maxScrapeTimeout caps the scrape timeout, which must not exceed
	// the interval.
	maxScrapeTimeout = 10 * time.Second
	// delayMonitorInterval is how often an ingester measures its Pulsar
	// processing delay (Armada's baked default).
	delayMonitorInterval        = "30s"
	defaultSchedulingCycleSecs  = 30
	defaultIngesterLagSeconds   = 300
	defaultQueuedJobs           = 1000
	defaultQueueBacklogMinutes  = 60
	labelGrafanaDashboard       = "grafana_dashboard"
	labelGrafanaDashboardLoaded = "1"
)

// defaultMonitoring fills spec.monitoring's defaults. The switches default
// to on, so enabling monitoring composes all of it.
func defaultMonitoring(m *v1alpha1.Monitoring) {
	on := func(b **bool) {
		if *b == nil {
			t := true
			*b = &t
		}
	}
	on(&m.ServiceMonitors)
	on(&m.Alerts.Enabled)
	on(&m.Dashboards.Enabled)
	if m.ScrapeInterval == "" {
		m.ScrapeInterval = defaultScrapeInterval
	}
	a := &m.Alerts
	if a.SchedulingCycleSeconds == 0 {
		a.SchedulingCycleSeconds = defaultSchedulingCycleSecs
	}
	if a.IngesterLagSeconds == 0 {
		a.IngesterLagSeconds = defaultIngesterLagSeconds
	}
	if a.QueuedJobs == 0 {
		a.QueuedJobs = defaultQueuedJobs
	}
	if a.QueueBacklogMinutes == 0 {
		a.QueueBacklogMinutes = defaultQueueBacklogMinutes
	}
}

// defaultPriorityClasses are Armada's executor chart priority classes
// (default 1000, preemptible 900), their names prefixed.
func defaultPriorityClasses(prefix string) []v1alpha1.PriorityClass {
	return []v1alpha1.PriorityClass{
		{Name: prefix + "default", Priority: 1000},
		{Name: prefix + "preemptible", Priority: 900, Preemptible: true},
	}
}

// legacyPriorityClassPrefix gives the chart's names, armada-default and
// armada-preemptible, which every Armada composed before names became
// per-Armada. An Armada that already composes them keeps them: running jobs
// reference them.
const legacyPriorityClassPrefix = "armada-"

// priorityClassPrefix prefixes an Armada's default priority class names.
// PriorityClasses are cluster-wide, so the default names include the
// Armada's namespace and name, and a short hash of the pair: "a-b"/"c" and
// "a"/"b-c" read alike but never share names. An Armada that already
// composes the legacy names keeps them.
func priorityClassPrefix(namespace, name string, composed []string) string {
	for _, pc := range defaultPriorityClasses(legacyPriorityClassPrefix) {
		if slices.Contains(composed, pc.Name) {
			return legacyPriorityClassPrefix
		}
	}
	sum := armadaHash(namespace, name, 3)
	if namespace == "" {
		// Refused for the missing namespace; only that error is reported.
		return fmt.Sprintf("%s-%s-", name, sum)
	}
	return fmt.Sprintf("%s-%s-%s-", namespace, name, sum)
}

// armadaHash is the hex of the first n bytes of the SHA-256 of an
// Armada's namespace and name: it tells apart names that would otherwise
// read alike ("a-b"/"c" and "a"/"b-c") or collide across namespaces.
func armadaHash(namespace, name string, n int) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return hex.EncodeToString(sum[:n])
}

// defaultResources are what Armada's charts and operator use for every
// long-running component.
func defaultResources() corev1.ResourceRequirements {
	return requirements("200m", "512Mi", "300m", "1Gi")
}

// requirements are requests and limits of CPU and memory.
func requirements(cpuRequest, memoryRequest, cpuLimit, memoryLimit string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpuRequest),
			corev1.ResourceMemory: resource.MustParse(memoryRequest),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpuLimit),
			corev1.ResourceMemory: resource.MustParse(memoryLimit),
		},
	}
}

// hasResource reports whether a list names a resource.
func hasResource(l corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := l[name]
	return ok
}

// redisResources are the in-cluster Redis's defaults: Redis is one
// single-threaded process whose memory holds the job-set event streams.
func redisResources() corev1.ResourceRequirements {
	return requirements("100m", "256Mi", "1", "1Gi")
}

// sentinelResources are a Sentinel's defaults: a small process that
// watches the Redis pods.
func sentinelResources() corev1.ResourceRequirements {
	return requirements("50m", "64Mi", "200m", "128Mi")
}

// migrationResources are what Armada's migration charts use.
func migrationResources() corev1.ResourceRequirements {
	return requirements("100m", "128Mi", "200m", "256Mi")
}

// topicJobResources are the Pulsar topic Job's: bash and a few curl
// calls, no JVM.
func topicJobResources() corev1.ResourceRequirements {
	return requirements("50m", "32Mi", "200m", "64Mi")
}

// applyDefaults fills every field the user left empty. It never overwrites
// a value the user set. priorityClassPrefix prefixes the default priority
// class names.
func applyDefaults(s *v1alpha1.ArmadaSpec, priorityClassPrefix string) {
	if s.Version == "" {
		s.Version = DefaultVersion
	}
	if s.DeletionPolicy == "" {
		s.DeletionPolicy = deletionOrphan
	}
	if s.ProviderConfigs.Kubernetes == "" {
		s.ProviderConfigs.Kubernetes = defaultProviderConfig
	}
	if s.ProviderConfigs.Helm == "" {
		s.ProviderConfigs.Helm = defaultProviderConfig
	}
	defaultBackingServices(s)
	defaultMonitoring(&s.Monitoring)
	defaultRetention(&s.Retention)
	if s.NetworkPolicies == nil {
		s.NetworkPolicies = ptr.To(true)
	}
	if s.TLS == nil {
		s.TLS = &v1alpha1.TLS{}
	}
	if s.TLS.Enabled == nil {
		s.TLS.Enabled = ptr.To(true)
	}
	if s.TLS.IssuerRef != nil {
		defaultIssuerRef(s.TLS.IssuerRef)
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
		s.Scheduling.PriorityClasses = defaultPriorityClasses(priorityClassPrefix)
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

// defaultBackingServices fills the Postgres, Redis and Pulsar defaults.
func defaultBackingServices(s *v1alpha1.ArmadaSpec) {
	if s.Postgres.Mode == "" {
		s.Postgres.Mode = modeExternal
	}
	if s.Postgres.Mode == modeInCluster {
		defaultPostgresInCluster(&s.Postgres)
	}
	defaultBackup(s.Postgres.Backup)
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
	if s.Redis.Mode == modeInCluster {
		if s.Redis.InCluster == nil {
			s.Redis.InCluster = &v1alpha1.RedisInCluster{}
		}
		if s.Redis.InCluster.StorageSize == nil {
			q := resource.MustParse("1Gi")
			s.Redis.InCluster.StorageSize = &q
		}
		if sn := s.Redis.InCluster.Sentinel; sn != nil {
			if sn.Replicas == nil {
				sn.Replicas = ptr.To[int32](defaultRedisReplicas)
			}
			if sn.Sentinels == nil {
				sn.Sentinels = ptr.To[int32](defaultSentinels)
			}
		}
	}
	if s.Redis.DB == nil {
		db := int32(defaultRedisDB)
		s.Redis.DB = &db
	}
	if s.Pulsar.Mode == "" {
		s.Pulsar.Mode = modeExternal
	}
	if s.Pulsar.Mode == modeInCluster {
		if s.Pulsar.InCluster == nil {
			s.Pulsar.InCluster = &v1alpha1.PulsarInCluster{}
		}
		if s.Pulsar.InCluster.Profile == "" {
			s.Pulsar.InCluster.Profile = pulsarProfileSmall
		}
	}
	if s.Pulsar.EventsPartitions == 0 {
		s.Pulsar.EventsPartitions = defaultEventsPartitions
	}
	if s.Pulsar.Tenant == "" {
		s.Pulsar.Tenant = defaultPulsarTenant
	}
	if s.Pulsar.Namespace == "" {
		s.Pulsar.Namespace = defaultPulsarNamespace
	}
}

func defaultPostgresInCluster(pg *v1alpha1.Postgres) {
	if pg.InCluster == nil {
		pg.InCluster = &v1alpha1.PostgresInCluster{}
	}
	ic := pg.InCluster
	if ic.Instances == 0 {
		ic.Instances = 1
	}
	if ic.StorageSize == nil {
		q := resource.MustParse("10Gi")
		ic.StorageSize = &q
	}
	if ic.ImageName == "" {
		ic.ImageName = cnpgImage
	}
	if ic.OperatorNamespace == "" {
		ic.OperatorNamespace = cnpgOperatorNamespace
	}
}

// resolveConnections points Armada at the in-cluster services, whose
// addresses and credentials follow from the install's name. It runs after
// validation, which has checked the user set none of these fields.
func (in *Install) resolveConnections() {
	s := &in.Spec
	if s.Postgres.Mode == modeInCluster {
		s.Postgres.Host = in.serviceHost("postgres-rw")
		s.Postgres.User = cnpgOwner
		s.Postgres.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: in.object("postgres-app"), Key: "password"}
	}
	if s.Redis.Mode == modeInCluster {
		s.Redis.Addrs = []string{net.JoinHostPort(in.serviceHost("redis"), strconv.Itoa(redisPort))}
		if in.sentinelOn() {
			s.Redis.Addrs = in.sentinelAddrs()
		}
		s.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: in.credentialsSecret(), Key: redisPassword}
	}
	if s.Pulsar.Mode == modeInCluster {
		s.Pulsar.URL = "pulsar://" + net.JoinHostPort(in.serviceHost("pulsar-broker"), "6650")
		s.Pulsar.AdminURL = "http://" + net.JoinHostPort(in.serviceHost("pulsar-broker"), strconv.Itoa(pulsarAdminPort))
		s.Pulsar.TokenSecretRef = &v1alpha1.SecretKeyRef{Name: in.pulsarTokenSecret(pulsarRoleArmada), Key: pulsarTokenSecretK}
	}
}

// resources is the user's resources over the default: see mergeResources.
func resources(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	return mergeResources(defaultResources(), r)
}

// mergeResources lays the user's requests and limits over the defaults,
// resource by resource: a resource the user does not name keeps its
// default, so "resources: {}" or requests alone never remove a limit. A
// default that would contradict the user's value gives way to it: a
// request above the default limit raises that limit to the request, a
// limit below the default request lowers that request to the limit.
func mergeResources(def corev1.ResourceRequirements, user *corev1.ResourceRequirements) corev1.ResourceRequirements {
	if user == nil {
		return def
	}
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}, Claims: user.Claims}
	maps.Copy(out.Requests, def.Requests)
	maps.Copy(out.Limits, def.Limits)
	for name, q := range user.Requests {
		out.Requests[name] = q
		if l, ok := out.Limits[name]; ok && !hasResource(user.Limits, name) && l.Cmp(q) < 0 {
			out.Limits[name] = q
		}
	}
	for name, q := range user.Limits {
		out.Limits[name] = q
		if r, ok := out.Requests[name]; ok && !hasResource(user.Requests, name) && r.Cmp(q) > 0 {
			out.Requests[name] = q
		}
	}
	return out
}
