package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// Postgres is how Armada reaches PostgreSQL.
// +kubebuilder:validation:XValidation:rule="self.mode != 'External' || (has(self.host) && has(self.user) && has(self.passwordSecretRef))",message="spec.postgres: External mode needs host, user and passwordSecretRef"
// +kubebuilder:validation:XValidation:rule="self.mode != 'InCluster' || !(has(self.host) || has(self.user) || has(self.passwordSecretRef) || has(self.adminSecretRef))",message="spec.postgres: InCluster mode takes no host, user, passwordSecretRef or adminSecretRef; the connection comes from the composed cluster"
// +kubebuilder:validation:XValidation:rule="self.mode == 'InCluster' || !has(self.inCluster)",message="spec.postgres.inCluster is only valid with mode: InCluster"
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode || (has(self.allowModeChange) && self.allowModeChange && !(has(oldSelf.allowModeChange) && oldSelf.allowModeChange))",message="spec.postgres.mode cannot change on a live Armada; set spec.postgres.allowModeChange: true in the same apply as the switch (it allows one switch: to switch again set it false, apply, then true with the new mode)"
// +kubebuilder:validation:XValidation:rule="self.mode == 'InCluster' || !has(self.backup)",message="spec.postgres.backup is only valid with mode: InCluster; back up an External database with its provider's tools (docs/guides/backups.md)"
// +kubebuilder:validation:XValidation:rule="self.mode == 'InCluster' || !has(self.restore)",message="spec.postgres.restore is only valid with mode: InCluster; restore an External database with its provider's tools (docs/guides/backups.md)"
// +kubebuilder:validation:XValidation:rule="self.mode != oldSelf.mode || (has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore))",message="spec.postgres.restore cannot be added, changed or removed on a live Armada: it only bootstraps a new cluster (create a new Armada to restore)"
type Postgres struct {
	// Mode of the database. External uses an existing server; InCluster
	// composes a CloudNativePG cluster (the CloudNativePG operator must be
	// installed).
	// +kubebuilder:validation:Enum=External;InCluster
	// +kubebuilder:default=External
	// +optional
	Mode string `json:"mode,omitempty"`
	// AllowModeChange permits one switch of mode on a live Armada, set in
	// the same apply as the switch. The old mode's resources leave desired
	// state; spec.deletionPolicy decides whether their data stays. To
	// switch again, set it false, apply, then set it true with the new mode.
	// +optional
	AllowModeChange bool `json:"allowModeChange,omitempty"`
	// AllowDatabaseRename permits renaming a database in spec.databases
	// under spec.deletionPolicy Delete, which drops the old database and
	// its data. Without it such a rename is refused; under Orphan a
	// renamed database stays in place and needs no permission.
	// +optional
	AllowDatabaseRename bool `json:"allowDatabaseRename,omitempty"`
	// Host of the external server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Host string `json:"host,omitempty"`
	// Port of the external server. Defaults to 5432.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// User Armada connects to the external server as. It must own, or be
	// able to create tables in, both databases.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	User string `json:"user,omitempty"`
	// PasswordSecretRef selects the external user's password.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
	// AdminSecretRef names a Secret holding an administrative connection to
	// the external server in provider-sql's format (keys endpoint, port,
	// username, password). When set, provider-sql creates both databases,
	// owned by user; without it they must already exist.
	// +optional
	AdminSecretRef *LocalSecretRef `json:"adminSecretRef,omitempty"`
	// SSLMode of the connection. Defaults to "require".
	// +kubebuilder:validation:Enum=disable;allow;prefer;require;verify-ca;verify-full
	// +optional
	SSLMode string `json:"sslMode,omitempty"`
	// Databases names the two databases.
	// +optional
	Databases Databases `json:"databases,omitempty"`
	// InCluster configures the composed CloudNativePG cluster.
	// +optional
	InCluster *PostgresInCluster `json:"inCluster,omitempty"`
	// Backup archives the in-cluster PostgreSQL to an object store
	// (InCluster mode only; see docs/guides/backups.md).
	// +optional
	Backup *PostgresBackup `json:"backup,omitempty"`
	// Restore bootstraps the in-cluster PostgreSQL from a backup when it
	// is created (InCluster mode only).
	// +optional
	Restore *PostgresRestore `json:"restore,omitempty"`
}

// PostgresInCluster configures an in-cluster CloudNativePG cluster.
type PostgresInCluster struct {
	// Instances of PostgreSQL: one primary and instances-1 replicas.
	// Defaults to 1; use 3 for high availability.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Instances int32 `json:"instances,omitempty"`
	// StorageSize of each instance's volume. Defaults to 10Gi.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`
	// StorageClass of the volumes. Defaults to the cluster's default.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Resources of each PostgreSQL instance.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ImageName is the PostgreSQL operand image. Defaults to the image the
	// pinned CloudNativePG release defaults to.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	ImageName string `json:"imageName,omitempty"`
	// OperatorNamespace is the namespace CloudNativePG's operator runs in.
	// The PostgreSQL pods' NetworkPolicy admits its pods there (labelled
	// app.kubernetes.io/name: cloudnative-pg, as its manifests and chart
	// label them) on 5432 and 8000, the instance manager's port. Defaults
	// to cnpg-system, the namespace its manifests and chart install to.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	OperatorNamespace string `json:"operatorNamespace,omitempty"`
}

// Databases names Armada's databases.
type Databases struct {
	// Scheduler database. Defaults to "scheduler".
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Scheduler string `json:"scheduler,omitempty"`
	// Lookout database, also used by the server for queues. Defaults to
	// "lookout".
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Lookout string `json:"lookout,omitempty"`
}

// Redis is how Armada reaches Redis.
// +kubebuilder:validation:XValidation:rule="self.mode != 'External' || (has(self.addrs) && size(self.addrs) > 0)",message="spec.redis: External mode needs addrs"
// +kubebuilder:validation:XValidation:rule="self.mode != 'InCluster' || !(has(self.addrs) || has(self.passwordSecretRef))",message="spec.redis: InCluster mode takes no addrs or passwordSecretRef; the function composes both"
// +kubebuilder:validation:XValidation:rule="self.mode == 'InCluster' || !has(self.inCluster)",message="spec.redis.inCluster is only valid with mode: InCluster"
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode || (has(self.allowModeChange) && self.allowModeChange && !(has(oldSelf.allowModeChange) && oldSelf.allowModeChange))",message="spec.redis.mode cannot change on a live Armada; set spec.redis.allowModeChange: true in the same apply as the switch (it allows one switch: to switch again set it false, apply, then true with the new mode)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'InCluster' || oldSelf.mode != 'InCluster' || (has(self.inCluster) && has(self.inCluster.sentinel)) == (has(oldSelf.inCluster) && has(oldSelf.inCluster.sentinel))",message="spec.redis.inCluster.sentinel cannot be added to or removed from a live in-cluster Redis: its pods' StatefulSet Service becomes headless, which Kubernetes cannot change in place; choose it when the Redis is first composed (or switch spec.redis.mode with allowModeChange)"
type Redis struct {
	// Mode of Redis. External uses an existing server; InCluster composes a
	// single-instance Redis StatefulSet with a persistent volume.
	// +kubebuilder:validation:Enum=External;InCluster
	// +kubebuilder:default=External
	// +optional
	Mode string `json:"mode,omitempty"`
	// AllowModeChange permits one switch of mode on a live Armada, set in
	// the same apply as the switch; see spec.postgres.allowModeChange.
	// +optional
	AllowModeChange bool `json:"allowModeChange,omitempty"`
	// Addrs are host:port addresses of the external Redis server or cluster.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=263
	// +listType=atomic
	// +optional
	Addrs []string `json:"addrs,omitempty"`
	// DB number shared by the server and the event ingester. Defaults to 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	// +optional
	DB *int32 `json:"db,omitempty"`
	// PasswordSecretRef selects the external Redis password, if it has one.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
	// InCluster configures the composed Redis.
	// +optional
	InCluster *RedisInCluster `json:"inCluster,omitempty"`
}

// RedisInCluster configures the in-cluster Redis.
type RedisInCluster struct {
	// StorageSize of the append-only-file volume. Defaults to 1Gi.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`
	// StorageClass of the volume. Defaults to the cluster's default.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Resources of the Redis container. Defaults to 100m/256Mi requests and
	// 1/1Gi limits; each request and limit you set replaces its default.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Image of Redis. Defaults to a pinned official Redis image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// Sentinel runs Redis as a primary with replicas, each with its own
	// append-only volume, watched by Redis Sentinel, which promotes a
	// replica when the primary fails (Armada's production guidance). The
	// server and the event ingester find the primary through Sentinel
	// (their go-redis masterName). Unset: a single Redis. Chosen when the
	// Redis is first composed; it cannot be added or removed later.
	// +optional
	Sentinel *RedisSentinel `json:"sentinel,omitempty"`
}

// RedisSentinel sizes a Redis with replicas and Sentinel failover.
// +kubebuilder:validation:XValidation:rule="!has(self.sentinels) || self.sentinels % 2 == 1",message="spec.redis.inCluster.sentinel.sentinels must be odd (3, 5, 7 or 9): a failover needs a majority of the Sentinels, and an even count survives no more failures than one fewer"
type RedisSentinel struct {
	// Replicas is the number of Redis pods: one primary, the others
	// replicas of it. Defaults to 3.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=9
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Sentinels is the number of Sentinel pods, odd; a majority of them
	// must agree to promote a replica. Defaults to 3.
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=9
	// +optional
	Sentinels *int32 `json:"sentinels,omitempty"`
}

// Pulsar is how Armada reaches Apache Pulsar.
// +kubebuilder:validation:XValidation:rule="self.mode != 'External' || (has(self.url) && has(self.adminURL))",message="spec.pulsar: External mode needs url and adminURL"
// +kubebuilder:validation:XValidation:rule="self.mode != 'InCluster' || !(has(self.url) || has(self.adminURL) || has(self.tokenSecretRef) || has(self.caSecretRef))",message="spec.pulsar: InCluster mode takes no url, adminURL, tokenSecretRef or caSecretRef; the function composes the broker"
// +kubebuilder:validation:XValidation:rule="self.mode == 'InCluster' || !has(self.inCluster)",message="spec.pulsar.inCluster is only valid with mode: InCluster"
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode || (has(self.allowModeChange) && self.allowModeChange && !(has(oldSelf.allowModeChange) && oldSelf.allowModeChange))",message="spec.pulsar.mode cannot change on a live Armada; set spec.pulsar.allowModeChange: true in the same apply as the switch (it allows one switch: to switch again set it false, apply, then true with the new mode)"
type Pulsar struct {
	// Mode of Pulsar. External uses an existing cluster; InCluster installs
	// the Apache Pulsar Helm chart through provider-helm.
	// +kubebuilder:validation:Enum=External;InCluster
	// +kubebuilder:default=External
	// +optional
	Mode string `json:"mode,omitempty"`
	// AllowModeChange permits one switch of mode on a live Armada, set in
	// the same apply as the switch; see spec.postgres.allowModeChange.
	// +optional
	AllowModeChange bool `json:"allowModeChange,omitempty"`
	// URL of the external broker, pulsar://host:6650 or pulsar+ssl://host:6651.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^pulsar(\+ssl)?://[^\s/]+$`
	// +optional
	URL string `json:"url,omitempty"`
	// AdminURL of the external cluster's admin REST API, for example
	// http://pulsar-broker.pulsar.svc:8080. The topic-init Job creates the
	// tenant, namespace and topics through it.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+/?$`
	// +optional
	AdminURL string `json:"adminURL,omitempty"`
	// Tenant holding Armada's topics; created if missing. Defaults to
	// "armada".
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// Namespace holding Armada's topics; created if missing. Defaults to
	// "armada".
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// EventsPartitions is the partition count of the events topic, which
	// bounds ingester parallelism. Defaults to 2. Pulsar can add partitions
	// later but never remove them.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	EventsPartitions int32 `json:"eventsPartitions,omitempty"`
	// TokenSecretRef selects a JWT the components and the topic-init Job
	// authenticate with.
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
	// CASecretRef selects a PEM CA bundle for pulsar+ssl:// and https URLs.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
	// InCluster configures the composed Pulsar.
	// +optional
	InCluster *PulsarInCluster `json:"inCluster,omitempty"`
}

// PulsarInCluster configures the in-cluster Pulsar release.
type PulsarInCluster struct {
	// Profile sizes the release. Small runs one ZooKeeper, bookie and
	// broker with small volumes, for development and small installations;
	// HA runs three of each, spread over nodes.
	// +kubebuilder:validation:Enum=Small;HA
	// +kubebuilder:default=Small
	// +optional
	Profile string `json:"profile,omitempty"`
	// StorageClass of the ZooKeeper and BookKeeper volumes. Defaults to the
	// cluster's default.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Values are Helm values merged over the profile's; yours win, except
	// auth, fullnameOverride, nameOverride and clusterName, which the
	// function sets (token authentication, and the names and labels its
	// Services and NetworkPolicies use) and refuses.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// BackingServiceStatus reports one backing service.
type BackingServiceStatus struct {
	// Mode of the service.
	Mode string `json:"mode"`
	// Ready is true when Armada may use the service: an in-cluster service
	// is up, its databases or topics exist.
	Ready bool `json:"ready"`
	// Reason says what the service is waiting for.
	// +optional
	Reason string `json:"reason,omitempty"`
	// DeletionPolicy is the spec.deletionPolicy the service's stateful
	// resources were last composed with. A mode switch in the apply that
	// changes spec.deletionPolicy is refused until this reports the new
	// policy.
	// +optional
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
	// ModeChangedTo is the mode spec.<service>.allowModeChange allowed a
	// switch to. While it is set allowModeChange allows no other switch;
	// it clears once allowModeChange is false.
	// +optional
	ModeChangedTo string `json:"modeChangedTo,omitempty"`
}
