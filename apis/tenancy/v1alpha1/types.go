package v1alpha1

import (
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
