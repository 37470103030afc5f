package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// ArmadaQueue is a queue the platform defines on its Armada. It becomes a
// provider-armada Queue reconciled through the composed server's API.
type ArmadaQueue struct {
	// Name of the queue in Armada.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	armadav1.QueueParameters `json:",inline"`
}

// XArmadaQueue gives a team its own queue on a shared Armada, owned by the
// team's groups, with the namespaces its jobs run in. Claim it with an
// ArmadaQueueClaim in the team's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
type XArmadaQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the team's queue.
	Spec ArmadaQueueSpec `json:"spec"`
	// Status reports the queue and where it lives.
	Status ArmadaQueueStatus `json:"status,omitempty"`
}

// ArmadaQueueSpec is a team's queue on a shared Armada.
type ArmadaQueueSpec struct {
	// Armada names the ArmadaClaim whose Armada holds the queue. It cannot
	// change: create another queue claim for a queue on another Armada.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.armada is immutable: create another ArmadaQueueClaim (or ArmadaQueue) for a queue on another Armada"
	Armada ArmadaReference `json:"armada"`

	// QueueName is the queue's name in Armada. Defaults to the claim's
	// name. It cannot change, nor be set or removed so the queue's name
	// changes (cluster/admission refuses those): create another queue
	// claim for another queue.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.queueName is immutable: create another ArmadaQueueClaim (or ArmadaQueue) for another queue"
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	QueueName string `json:"queueName,omitempty"`

	// GroupOwners are the team's groups; their members own the queue.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	GroupOwners []string `json:"groupOwners"`

	// UserOwners are users who own the queue besides the groups.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	UserOwners []string `json:"userOwners,omitempty"`

	// PriorityFactor of the queue, at least 1. Defaults to "1".
	// +optional
	PriorityFactor armadav1.PriorityFactor `json:"priorityFactor,omitempty"`

	// Permissions grant other users and groups verbs on the queue's jobs.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Permissions []armadav1.QueuePermission `json:"permissions,omitempty"`

	// Namespaces the team's jobs run in. Each is created in the target
	// Armada's executor cluster, labelled with the queue's name. Each must
	// not exist yet (or be this queue's own), and is never the target
	// Armada's namespace or the platform's (kube-*, default,
	// crossplane-system): an existing namespace is refused, never adopted.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.all(n, !n.startsWith('kube-') && n != 'default' && n != 'crossplane-system')",message="spec.namespaces cannot name the platform's namespaces (kube-*, default, crossplane-system): name a namespace for the team's jobs that does not exist yet"
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// Quota caps the share of each priority class the queue's jobs may
	// use: priority class, then resource, to a fraction from 0 to 1, e.g.
	// {armada-default: {cpu: "0.25"}}.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Quota map[string]QueueQuota `json:"quota,omitempty"`
}

// QueueQuota caps resources as fractions of a pool.
// +kubebuilder:validation:MaxProperties=16
type QueueQuota map[string]armadav1.Fraction

// ArmadaReference names an ArmadaClaim.
type ArmadaReference struct {
	// Name of the ArmadaClaim.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	Name string `json:"name"`
	// Namespace of the ArmadaClaim. Defaults to the queue claim's
	// namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ArmadaQueueStatus reports a team's queue.
type ArmadaQueueStatus struct {
	// Queue is the queue's name in Armada.
	// +optional
	Queue string `json:"queue,omitempty"`
	// Armada is the namespace/name of the Armada holding it.
	// +optional
	Armada string `json:"armada,omitempty"`
	// Endpoint is the Armada server's gRPC address, for armadactl.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Namespaces the team's jobs may run in.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
}
