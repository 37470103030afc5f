package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names the function looks policies up by.
const (
	// Group and Version of ArmadaTenancyPolicy.
	Group   = "platform.armadaproject.io"
	Version = "v1alpha1"
	// Kind of the policy.
	Kind = "ArmadaTenancyPolicy"
	// DefaultPolicyName is the policy of every namespace without its own.
	DefaultPolicyName = "default"
)

// ArmadaTenancyPolicy is what the platform team lets one tenant name
// outside its own namespace. A policy named after a namespace governs the
// Armadas and team queues in that namespace; the policy named "default"
// governs every other namespace. Without either, function-armada applies
// the built-in default: an Armada may use the "default" provider configs
// for its in-cluster backing services and nothing else outside its
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=armada
type ArmadaTenancyPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the tenant may name.
	// +optional
	Spec TenancyPolicySpec `json:"spec,omitempty"`
}

// TenancyPolicySpec is what one tenant may name outside its namespace.
// Every list is an allowlist: what it does not list is refused.
type TenancyPolicySpec struct {
	// AllowArmada says whether the namespace may hold an Armada (an
	// ArmadaClaim or a namespaced Armada). Defaults to true.
	// +optional
	AllowArmada *bool `json:"allowArmada,omitempty"`

	// ProviderConfigs the tenant may name, by use.
	// +optional
	ProviderConfigs ProviderConfigPolicy `json:"providerConfigs,omitempty"`

	// ImageRegistries are the registries (optionally with a path) images
	// may come from when the tenant chooses one: spec.imageRegistry, a
	// component's image.repository, spec.postgres.inCluster.imageName and
	// spec.redis.inCluster.image. An image is allowed when its registry
	// and path start with an entry, at a "/" boundary. An image without a
	// registry host is on Docker Hub, "docker.io". Unset, images keep the
	// function's defaults and every other choice is refused.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`
	// +listType=set
	// +optional
	ImageRegistries []string `json:"imageRegistries,omitempty"`

	// MaxPriority is the highest value of a PriorityClass the tenant's
	// Armada may define (spec.scheduling.priorityClasses[].priority).
	// Defaults to 100000, far below Kubernetes' system classes.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000
	// +optional
	MaxPriority *int32 `json:"maxPriority,omitempty"`

	// PulsarValues are the Helm value paths of the in-cluster Pulsar
	// chart (spec.pulsar.inCluster.values) the tenant may set, dotted, for
	// example "broker.resources": the path and everything under it. Unset,
	// no values are allowed.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// +listType=set
	// +optional
	PulsarValues []string `json:"pulsarValues,omitempty"`

	// AllowAuthConfig lets the tenant's config overrides
	// (spec.components.*.config, spec.executors[].config) set keys about
	// authentication and authorisation: auth blocks, basic-auth users,
	// OIDC, anonymous access, permission mappings, impersonation. Off by
	// default: spec.auth is the one place for a user-facing method.
	// +optional
	AllowAuthConfig bool `json:"allowAuthConfig,omitempty"`

	// QueueArmadas are the Armadas in other namespaces the tenant's team
	// queues (ArmadaQueueClaim, ArmadaQueue) may attach to. An Armada in
	// the queue's own namespace is always allowed.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	QueueArmadas []ArmadaRef `json:"queueArmadas,omitempty"`

	// JobNamespaces are the guard rails of every job namespace the
	// tenant's claims compose (a team queue's spec.namespaces): the Pod
	// Security level it enforces, its ResourceQuota and LimitRange, and
	// the names it may have.
	// +optional
	JobNamespaces JobNamespacePolicy `json:"jobNamespaces,omitempty"`
}

// Pod Security Standards levels a job namespace may enforce.
const (
	PodSecurityRestricted = "restricted"
	PodSecurityBaseline   = "baseline"
	PodSecurityPrivileged = "privileged"
)

// JobNamespacePolicy is what every job namespace of a tenant carries, and
// which names it may have.
type JobNamespacePolicy struct {
	// PodSecurity is the Pod Security Standards level every job namespace
	// enforces (pod-security.kubernetes.io/enforce, and warn and audit at
	// the same level, each at version "latest"): Kubernetes' Pod Security
	// admission refuses a pod that breaks it, whoever creates the pod,
	// Armada's executor included. Defaults to restricted; only the
	// platform's policy can lower it.
	// +kubebuilder:validation:Enum=restricted;baseline;privileged
	// +optional
	PodSecurity string `json:"podSecurity,omitempty"`

	// ResourceQuota, when set, is the spec of a ResourceQuota composed in
	// every job namespace: the most the namespace's pods may request
	// together.
	// +optional
	ResourceQuota *corev1.ResourceQuotaSpec `json:"resourceQuota,omitempty"`

	// LimitRange, when set, is the spec of a LimitRange composed in every
	// job namespace: defaults and bounds for each pod's and container's
	// resources.
	// +optional
	LimitRange *corev1.LimitRangeSpec `json:"limitRange,omitempty"`

	// Names are the names the tenant's job namespaces may have, as
	// patterns: "*" matches any run of characters, and "{namespace}"
	// stands for the tenant's namespace. A name is allowed when it
	// matches an entry. Defaults to ["{namespace}-*"]: names prefixed
	// with the tenant's namespace and a dash.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9*-]|\{namespace\})+$`
	// +listType=set
	// +optional
	Names []string `json:"names,omitempty"`
}

// ProviderConfigPolicy lists the provider configs a tenant may name, by
// the field that names them.
type ProviderConfigPolicy struct {
	// Kubernetes are the provider-kubernetes ClusterProviderConfigs
	// spec.providerConfigs.kubernetes may name. Defaults to ["default"].
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Kubernetes []string `json:"kubernetes,omitempty"`
	// Helm are the provider-helm ClusterProviderConfigs
	// spec.providerConfigs.helm may name. Defaults to ["default"].
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Helm []string `json:"helm,omitempty"`
	// ClusterScope are the provider-kubernetes configs
	// spec.clusterScope.providerConfigRef of a namespaced Armada or
	// ArmadaQueue may name. Defaults to none.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ClusterScope []ConfigRef `json:"clusterScope,omitempty"`
	// WorkerClusters are the provider-kubernetes configs
	// spec.executors[].cluster.providerConfigRef may name: the worker
	// clusters the tenant's executors may run in. Defaults to none.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	WorkerClusters []ConfigRef `json:"workerClusters,omitempty"`
}

// ConfigRef names a provider-kubernetes config.
type ConfigRef struct {
	// Kind is ClusterProviderConfig, or ProviderConfig for one in the
	// tenant's namespace.
	// +kubebuilder:validation:Enum=ClusterProviderConfig;ProviderConfig
	// +kubebuilder:default=ClusterProviderConfig
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the config.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ArmadaRef names an Armada: an ArmadaClaim or a namespaced Armada.
type ArmadaRef struct {
	// Namespace of the Armada.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the Armada.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// ArmadaTenancyPolicyList is a list of ArmadaTenancyPolicies.
//
// +kubebuilder:object:root=true
type ArmadaTenancyPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []ArmadaTenancyPolicy `json:"items"`
}
