package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// XArmada is a complete Armada installation: its eight components, their
// configuration, database migrations, priority classes and executors. Claim
// it with an ArmadaClaim in the namespace Armada should run in.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
type XArmada struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired Armada installation.
	Spec ArmadaSpec `json:"spec"`
	// Status reports what was composed and how healthy it is.
	Status ArmadaStatus `json:"status,omitempty"`
}

// ArmadaSpec is the desired state of one Armada installation.
// +kubebuilder:validation:XValidation:rule="self.auth.anonymous || (has(self.auth.basicUsers) && size(self.auth.basicUsers) > 0) || has(self.auth.oidc)",message="spec.auth needs at least one user-facing method: basicUsers, oidc, or anonymous: true"
// +kubebuilder:validation:XValidation:rule="!has(self.executors) || !self.executors.exists(e, has(e.cluster)) || (has(self.executorApi) && has(self.executorApi.url)) || (has(self.ingress) && has(self.ingress.executorApiHost))",message="spec.executors[].cluster: executors in other clusters dial the scheduler's executor API; set spec.executorApi.url or spec.ingress.executorApiHost"
// +kubebuilder:validation:XValidation:rule="!has(self.actions) || !has(self.actions.backup) || (has(self.postgres.mode) && self.postgres.mode == 'InCluster' && has(self.postgres.backup))",message="spec.actions.backup backs up the in-cluster PostgreSQL: it needs spec.postgres.mode InCluster and spec.postgres.backup"
// +kubebuilder:validation:XValidation:rule="!has(self.executors) || self.executors.all(e, !has(e.pool) || (has(self.scheduling) && has(self.scheduling.pools) ? self.scheduling.pools.exists(p, p.name == e.pool) : e.pool == 'default'))",message="every spec.executors[].pool must name a pool in spec.scheduling.pools"
type ArmadaSpec struct {
	// Version is the Armada release to run, without the leading "v". It selects
	// the image tags and names the migration Jobs, so changing it re-runs the
	// migrations before the new images roll out. Downgrades are refused.
	// The supported releases (the enum) and the default are injected from
	// the function's table when the XRD is generated.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="int(self.split('.')[0]) * 1000000 + int(self.split('.')[1]) * 1000 + int(self.split('.')[2]) >= int(oldSelf.split('.')[0]) * 1000000 + int(oldSelf.split('.')[1]) * 1000 + int(oldSelf.split('.')[2])",message="spec.version cannot be downgraded; roll forward to a newer release instead"
	// +optional
	Version string `json:"version,omitempty"`

	// Namespace all namespaced objects are created in. Defaults to the
	// claim's namespace; required when the XArmada is created without a claim.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// ImageRegistry is prepended to every default image repository, for
	// example "registry.example.com/mirror" or "localhost:5000". Defaults
	// to Docker Hub. The platform's ArmadaTenancyPolicy lists the
	// registries a tenant may name.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*/?$`
	// +optional
	ImageRegistry string `json:"imageRegistry,omitempty"`

	// ImagePullSecrets are added to every composed pod.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Components holds per-component settings. Every component is deployed;
	// an empty entry uses the defaults.
	// +optional
	Components Components `json:"components,omitempty"`

	// Auth configures how users authenticate. At least one method is
	// required; anonymous access must be asked for explicitly.
	Auth Auth `json:"auth"`

	// Postgres is the PostgreSQL server that holds the scheduler and lookout
	// databases.
	Postgres Postgres `json:"postgres"`

	// Redis holds the job-set event streams served by the watch API.
	Redis Redis `json:"redis"`

	// Pulsar carries Armada's event and control-plane topics.
	Pulsar Pulsar `json:"pulsar"`

	// DeletionPolicy of the stateful resources this Armada composes: the
	// in-cluster PostgreSQL cluster and its databases, databases created on
	// an external server, the in-cluster Redis volume and the in-cluster
	// Pulsar release. Orphan (the default) leaves them and their data in
	// place when the claim is deleted or a service's mode is switched;
	// Delete removes them with it.
	// +kubebuilder:validation:Enum=Orphan;Delete
	// +kubebuilder:default=Orphan
	// +optional
	DeletionPolicy string `json:"deletionPolicy,omitempty"`

	// ProviderConfigs names the ClusterProviderConfigs of the Crossplane
	// providers that manage in-cluster backing services.
	// +optional
	ProviderConfigs ProviderConfigs `json:"providerConfigs,omitempty"`

	// Scheduling configures pools and priority classes.
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty"`

	// Executors run jobs. Each entry is one executor in this cluster with its
	// own cluster id and pool. Defaults to one executor "local" in pool
	// "default".
	// +listType=map
	// +listMapKey=clusterId
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Executors []Executor `json:"executors,omitempty"`

	// Queues are created in this Armada through provider-armada, which
	// authenticates to the composed server as an internal user.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Queues []ArmadaQueue `json:"queues,omitempty"`

	// JobNamespaces are the namespaces the jobs of spec.queues run in,
	// created for that purpose (never adopted: each must not exist yet, or
	// be this Armada's own) in this cluster and in every worker cluster,
	// each with a default ServiceAccount that mounts no token. The
	// executor may create pods only there (and in team queues' own
	// namespaces), and an admission policy admits a job's pod only in a
	// job namespace of its queue. Never the Armada's own namespace nor the
	// platform's (kube-*, default, crossplane-system). Defaults to one
	// namespace, <Armada's namespace>-jobs.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.all(n, !n.startsWith('kube-') && n != 'default' && n != 'crossplane-system')",message="spec.jobNamespaces cannot name the platform's namespaces (kube-*, default, crossplane-system): name namespaces for the jobs that do not exist yet"
	// +listType=set
	// +optional
	JobNamespaces []string `json:"jobNamespaces,omitempty"`

	// Ingress exposes the server's gRPC and REST APIs and Lookout.
	// +optional
	Ingress *Ingress `json:"ingress,omitempty"`

	// ExecutorAPI is how executors in other clusters reach the scheduler.
	// +optional
	ExecutorAPI *ExecutorAPI `json:"executorApi,omitempty"`
	// Monitoring composes ServiceMonitors, alerting rules and Grafana
	// dashboards. Off by default.
	// +optional
	Monitoring Monitoring `json:"monitoring,omitempty"`

	// NetworkPolicies composes NetworkPolicies that deny every connection
	// to and from Armada's pods in its namespace except the ones Armada
	// needs: between its components, to its backing services, DNS and the
	// Kubernetes API, from users to the server, Lookout and binoculars,
	// and from Prometheus when monitoring is on. NetworkPolicies are
	// additive: add your own to allow more. Set false to compose none.
	// Defaults to true.
	// +kubebuilder:default=true
	// +optional
	NetworkPolicies *bool `json:"networkPolicies,omitempty"`

	// TLS encrypts Armada's internal gRPC links: the server's gRPC and
	// HTTP ports and the scheduler's gRPC port serve TLS, and the server,
	// the scheduler and in-cluster executors verify it against a private
	// CA, generated or a cert-manager issuer's (tls.issuerRef). On by
	// default; set tls.enabled to false to turn it off.
	// +optional
	TLS *TLS `json:"tls,omitempty"`

	// Rotation rotates generated passwords and the generated CA: raising a
	// generation replaces the secret and rolls the pods that use it.
	// +optional
	Rotation *Rotation `json:"rotation,omitempty"`

	// Retention prunes finished jobs from the scheduler and lookout
	// databases on a schedule, as Armada's charts do. On by default.
	// +optional
	Retention Retention `json:"retention,omitempty"`

	// Actions are operator actions: restart components, back up now.
	// Pausing is Crossplane's: annotate the XR crossplane.io/paused=true.
	// +optional
	Actions *Actions `json:"actions,omitempty"`
}

// TLS configures encryption of Armada's internal links.
// +kubebuilder:validation:XValidation:rule="!has(self.issuerRef) || !has(self.enabled) || self.enabled",message="spec.tls.issuerRef needs spec.tls.enabled: true"
type TLS struct {
	// Enabled turns TLS on. Without issuerRef the function generates a
	// private CA (ECDSA P-256) and a certificate for each TLS server with its
	// Service DNS names, once, into the Secret <name>-tls, and reuses them
	// from then on. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// IssuerRef names a cert-manager issuer. With it the function composes
	// a cert-manager Certificate (cert-manager.io/v1) per TLS server, each
	// into its own Secret <name>-<component>-tls, instead of generating
	// keys; the issuer must write the CA into the Secret's ca.crt (CA,
	// SelfSigned and Vault issuers do), which every in-cluster client
	// trusts.
	// +optional
	IssuerRef *IssuerRef `json:"issuerRef,omitempty"`
}

// IssuerRef references a cert-manager Issuer or ClusterIssuer, as
// cert-manager's ObjectReference does.
type IssuerRef struct {
	// Name of the issuer; an Issuer is looked up in Armada's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
	// Kind of the issuer: Issuer or ClusterIssuer. Defaults to Issuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer. Defaults to cert-manager.io.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:default=cert-manager.io
	// +optional
	Group string `json:"group,omitempty"`
}

// Components holds the settings of each Armada component.
type Components struct {
	// Server is the Armada API server (gRPC and REST).
	// +optional
	Server Component `json:"server,omitempty"`
	// Scheduler is the leader-elected scheduler that also serves executors.
	// +optional
	Scheduler Component `json:"scheduler,omitempty"`
	// SchedulerIngester writes Pulsar events into the scheduler database.
	// +optional
	SchedulerIngester Component `json:"schedulerIngester,omitempty"`
	// Lookout is the web UI and its API.
	// +optional
	Lookout Component `json:"lookout,omitempty"`
	// LookoutIngester writes Pulsar events into the lookout database.
	// +optional
	LookoutIngester Component `json:"lookoutIngester,omitempty"`
	// EventIngester writes Pulsar events into Redis for the watch API.
	// +optional
	EventIngester Component `json:"eventIngester,omitempty"`
	// Binoculars serves job logs and node cordoning to Lookout.
	// +optional
	Binoculars Component `json:"binoculars,omitempty"`
	// Executor holds settings shared by every executor; an executor's own
	// entry in spec.executors wins over these.
	// +optional
	Executor Component `json:"executor,omitempty"`
}

// Component is the workload settings of one Armada component.
type Component struct {
	// Replicas of the component. Executors always run one replica.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of the component's container. Defaults to 200m/512Mi
	// requests and 300m/1Gi limits, as Armada's charts use. Each request
	// and limit you set replaces its default; one you leave out keeps it,
	// so every container keeps a CPU and a memory limit.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Image overrides the component's image. Unset fields keep the default
	// repository (gresearch/armada-<component>) and tag (spec.version).
	// +optional
	Image *Image `json:"image,omitempty"`

	// NodeSelector constrains the component's pods to matching nodes.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the component's pods.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the component's pods (a Kubernetes Affinity). Defaults
	// to a preferred pod anti-affinity across nodes. Its schema is checked
	// when the workload is applied, not here, to keep the XRD small.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints of the component's pods.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// Config is free-form Armada configuration merged over the generated
	// configuration of this component: maps merge key by key, lists and
	// scalars replace, and this value always wins. Do not put secrets here;
	// it is stored in a Secret but is visible to anyone who can read the XR.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Config *runtime.RawExtension `json:"config,omitempty"`
}

// Image names a container image.
type Image struct {
	// Repository of the image, for example "gresearch/armada-server".
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._/:-][a-z0-9]+)*$`
	// +optional
	Repository string `json:"repository,omitempty"`
	// Tag of the image. Defaults to spec.version.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$`
	// +optional
	Tag string `json:"tag,omitempty"`
}

// Auth configures authentication for users and between components.
// Components always authenticate to each other with generated basic-auth
// credentials kept in a Secret.
type Auth struct {
	// Anonymous lets unauthenticated requests in as the principal
	// "anonymous", with every permission. Only for throwaway installations.
	// +kubebuilder:default=false
	// +optional
	Anonymous bool `json:"anonymous"`

	// BasicUsers are static users whose passwords are generated and stored
	// in the Secret named in status.credentialsSecret.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	BasicUsers []BasicUser `json:"basicUsers,omitempty"`

	// OIDC validates bearer tokens from an OpenID Connect provider, and
	// enables the OIDC login flow in Lookout.
	// +optional
	OIDC *OIDC `json:"oidc,omitempty"`

	// AdminGroups are granted every Armada permission. Defaults to
	// ["armada-admins"].
	// +listType=set
	// +optional
	AdminGroups []string `json:"adminGroups,omitempty"`
}

// BasicUser is a static user with a generated password.
type BasicUser struct {
	// Name of the user.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9]{0,31}$`
	Name string `json:"name"`
	// Groups the user belongs to; use an admin group for full rights.
	// +listType=set
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// OIDC configures OpenID Connect authentication.
type OIDC struct {
	// ProviderURL is the issuer URL, e.g. https://login.example.com/realms/armada.
	// +kubebuilder:validation:Pattern=`^https://`
	ProviderURL string `json:"providerUrl"`
	// ClientID the tokens must be issued for.
	// +kubebuilder:validation:MinLength=1
	ClientID string `json:"clientId"`
	// GroupsClaim names the token claim holding the user's groups.
	// Defaults to "groups".
	// +optional
	GroupsClaim string `json:"groupsClaim,omitempty"`
	// Scope Lookout requests in its browser login flow. Defaults to
	// "openid email profile".
	// +optional
	Scope string `json:"scope,omitempty"`
	// CASecretRef is a Secret in the Armada's namespace holding the CA
	// certificate (PEM) that signed the provider's certificate, for a
	// provider a private CA vouches for. The components that verify
	// tokens (server, scheduler, Lookout, binoculars) fetch the
	// provider's keys at start and trust the system roots and this CA
	// (SSL_CERT_DIR); a browser must trust it too, for the login page.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
}

// ProviderConfigs names ClusterProviderConfigs.
type ProviderConfigs struct {
	// Kubernetes is the provider-kubernetes ClusterProviderConfig that
	// manages the in-cluster PostgreSQL cluster, which is wrapped in an
	// Object so that it can outlive the claim. Defaults to "default".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Kubernetes string `json:"kubernetes,omitempty"`
	// Helm is the provider-helm ClusterProviderConfig that installs the
	// in-cluster Pulsar chart. Defaults to "default".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Helm string `json:"helm,omitempty"`
}

// LocalSecretRef names a Secret in the target namespace.
type LocalSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeyRef selects a key of a Secret in the target namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// Scheduling configures pools and priority classes.
type Scheduling struct {
	// Pools jobs are scheduled into. Every executor's pool must be listed.
	// Defaults to one pool named "default".
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Pools []Pool `json:"pools,omitempty"`

	// PriorityClasses Armada jobs may use. Each becomes a Kubernetes
	// PriorityClass and an entry in the scheduler's and server's config.
	// PriorityClass objects are cluster-wide, so two Armadas in one cluster
	// need different names. Defaults to armada-default (1000) and
	// armada-preemptible (900, preemptible).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty"`

	// DefaultPriorityClass is used by jobs that name none. Defaults to the
	// first priority class.
	// +optional
	DefaultPriorityClass string `json:"defaultPriorityClass,omitempty"`
}

// Pool is a scheduling pool.
type Pool struct {
	// Name of the pool.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`
}

// PriorityClass is an Armada priority class.
type PriorityClass struct {
	// Name of the priority class.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`
	// Priority value of the Kubernetes PriorityClass.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000
	Priority int32 `json:"priority"`
	// Preemptible jobs may be preempted by the scheduler.
	// +optional
	Preemptible bool `json:"preemptible,omitempty"`
}

// Executor is one Armada executor running in this cluster.
type Executor struct {
	// ClusterID identifies the executor to Armada and in Lookout.
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`
	ClusterID string `json:"clusterId"`
	// Pool the executor's nodes belong to. Defaults to the first pool.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Pool string `json:"pool,omitempty"`
	// Resources of the executor container; wins over
	// spec.components.executor.resources.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector of the executor pod; wins over
	// spec.components.executor.nodeSelector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// NodeTaint confines the executor to the nodes reserved for it: nodes
	// with this NoSchedule taint. The executor counts them (its
	// kubernetes.toleratedTaints) and its pool's jobs tolerate the taint
	// (the scheduler's pools[].jobDefaults.tolerations); nodes with any
	// other NoSchedule taint are invisible to it. Armada's executor also
	// counts every untainted node, so where several Armadas share a
	// cluster, taint each node that runs Armada jobs with one Armada's key.
	// +optional
	NodeTaint *NodeTaint `json:"nodeTaint,omitempty"`
	// Cluster is the worker cluster the executor runs in. Without it the
	// executor runs in this cluster.
	// +optional
	Cluster *ExecutorCluster `json:"cluster,omitempty"`
	// Config is merged over spec.components.executor.config for this
	// executor only.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Config *runtime.RawExtension `json:"config,omitempty"`
}

// ExecutorCluster is a worker cluster, reached through provider-kubernetes.
type ExecutorCluster struct {
	// ProviderConfigRef names the provider-kubernetes
	// (kubernetes.m.crossplane.io) config whose credentials reach the
	// worker cluster. The executor, its RBAC, config and identity, the
	// namespace and Armada's PriorityClasses are composed there as
	// provider-kubernetes Objects.
	ProviderConfigRef ProviderConfigRef `json:"providerConfigRef"`
}

// ProviderConfigRef names a provider-kubernetes config.
type ProviderConfigRef struct {
	// Kind is ClusterProviderConfig (cluster-wide) or ProviderConfig (in
	// the claim's namespace).
	// +kubebuilder:validation:Enum=ClusterProviderConfig;ProviderConfig
	// +kubebuilder:default=ClusterProviderConfig
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the config.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ExecutorAPI is how executors in other clusters reach the scheduler.
type ExecutorAPI struct {
	// URL is the host:port executors in other clusters dial for the
	// scheduler's executor API (gRPC). Defaults to
	// spec.ingress.executorApiHost on port 443.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?:[0-9]{1,5}$`
	// +optional
	URL string `json:"url,omitempty"`
	// CASecretRef is a Secret in the Armada's namespace holding the CA
	// certificate (PEM) that signed the executor API's certificate.
	// Armada's client trusts only system roots; with this set, remote
	// executors trust this CA instead (SSL_CERT_FILE).
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
	// Insecure dials the executor API without TLS, so executor passwords
	// cross the network in clear. For test setups only.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// NodeTaint is the NoSchedule taint of the nodes an executor may use.
type NodeTaint struct {
	// Key of the taint, e.g. armadaproject.io/team-a.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Value of the taint. Jobs tolerate exactly this value; empty
	// tolerates any value.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`
}

// Ingress exposes Armada outside the cluster.
type Ingress struct {
	// ClassName of the Ingress controller, e.g. "nginx".
	// +optional
	ClassName string `json:"className,omitempty"`
	// Annotations added to every Ingress, e.g. a cert-manager issuer.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// GRPCHost serves the server's gRPC API (armadactl).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	GRPCHost string `json:"grpcHost"`
	// RESTHost serves the server's REST API. It may equal LookoutHost, in
	// which case the API is served under /api.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	RESTHost string `json:"restHost"`
	// LookoutHost serves the Lookout UI.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	LookoutHost string `json:"lookoutHost"`
	// ExecutorAPIHost serves the scheduler's executor API (gRPC), for
	// executors in other clusters.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ExecutorAPIHost string `json:"executorApiHost,omitempty"`
	// TLSSecretName is a Secret holding a certificate for all three hosts.
	// Without it the endpoints are plain http.
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}
