package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Armada is a complete Armada installation in the Armada's own namespace:
// the namespaced, Crossplane v2-native counterpart of an ArmadaClaim. What
// Armada needs cluster-wide (its PriorityClasses and the executor's and
// binoculars' ClusterRoles and bindings) is composed through
// provider-kubernetes Objects named by spec.clusterScope.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type Armada struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired Armada installation.
	Spec ArmadaSpec `json:"spec"`
	// Status reports what was composed and how healthy it is.
	Status v1alpha1.ArmadaStatus `json:"status,omitempty"`
}

// ArmadaSpec is an XArmada's spec without spec.namespace, with
// spec.clusterScope.
type ArmadaSpec struct {
	v1alpha1.ArmadaSpec `json:",inline"`

	// ClusterScope is how this Armada composes the objects a namespaced
	// composite resource cannot compose directly: they are wrapped in
	// provider-kubernetes Objects in this namespace. Required unless the
	// Armada composes nothing cluster-scoped (every executor in another
	// cluster and no PriorityClasses).
	// +optional
	ClusterScope *ClusterScope `json:"clusterScope,omitempty"`
}

// ClusterScope names the provider-kubernetes config that composes
// cluster-scoped objects in this cluster.
type ClusterScope struct {
	// ProviderConfigRef names the provider-kubernetes
	// (kubernetes.m.crossplane.io) config whose credentials reach this
	// cluster, usually a ClusterProviderConfig with InjectedIdentity.
	ProviderConfigRef v1alpha1.ProviderConfigRef `json:"providerConfigRef"`
}

// TeamQueue is the namespaced ArmadaQueue kind: it gives a team its own
// queue on an Armada, in the team's namespace, the Crossplane v2-native
// counterpart of an ArmadaQueueClaim. internal/build/cmd/xrdgen names the kind;
// the Go name ArmadaQueue is apis/v1alpha1's spec.queues entry, and
// controller-gen looks kinds up by Go name across the group's packages.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type TeamQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the team's queue.
	Spec ArmadaQueueSpec `json:"spec"`
	// Status reports the queue and where it lives.
	Status v1alpha1.ArmadaQueueStatus `json:"status,omitempty"`
}

// ArmadaQueueSpec is an XArmadaQueue's spec, with spec.clusterScope.
type ArmadaQueueSpec struct {
	v1alpha1.ArmadaQueueSpec `json:",inline"`

	// ClusterScope is how the queue composes what lies outside its
	// namespace: the team's job namespaces and, when the Armada is in
	// another namespace, its provider-armada Queue there. Defaults to the
	// target Armada's spec.clusterScope when that names a
	// ClusterProviderConfig.
	// +optional
	ClusterScope *ClusterScope `json:"clusterScope,omitempty"`
}
