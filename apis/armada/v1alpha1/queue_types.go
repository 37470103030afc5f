package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A Decimal is a non-negative decimal number written as a string, such as
// "1", "2.5" or "0.25". Armada holds these values as float64; the API keeps
// them as strings because Kubernetes API conventions and controller-gen
// discourage floats (they do not round-trip exactly through JSON and YAML),
// and because a string lets the schema bound the value with a pattern alone,
// which costs the API server nothing to evaluate, unlike a CEL rule.
type Decimal string

// A PriorityFactor is a queue's priority factor: a decimal number of at
// least 1, such as "1" or "1.5". The pattern admits exactly the numbers
// Armada accepts (Armada rejects factors below 1).
// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,8}(\.[0-9]{1,9})?$`
// +kubebuilder:validation:MaxLength=19
type PriorityFactor Decimal

// A Fraction is a share of a resource: a decimal number from 0 to 1
// inclusive, such as "0", "0.25", or "1".
// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,9})?|1(\.0{1,9})?)$`
// +kubebuilder:validation:MaxLength=11
type Fraction Decimal

// A PermissionVerb is an action a permission allows on a queue's jobs.
// +kubebuilder:validation:Enum=submit;cancel;preempt;reprioritize;watch
type PermissionVerb string

// The verbs Armada knows.
const (
	VerbSubmit       PermissionVerb = "submit"
	VerbCancel       PermissionVerb = "cancel"
	VerbPreempt      PermissionVerb = "preempt"
	VerbReprioritize PermissionVerb = "reprioritize"
	VerbWatch        PermissionVerb = "watch"
)

// AllVerbs are every verb, in Armada's order. Armada grants a queue's owners
// all of them.
var AllVerbs = []PermissionVerb{VerbSubmit, VerbCancel, VerbPreempt, VerbReprioritize, VerbWatch}

// A SubjectKind is the kind of principal a permission names.
// +kubebuilder:validation:Enum=User;Group
type SubjectKind string

// The subject kinds Armada knows.
const (
	SubjectKindUser  SubjectKind = "User"
	SubjectKindGroup SubjectKind = "Group"
)

// A PermissionSubject is one principal a permission applies to.
type PermissionSubject struct {
	// Kind of principal: User or Group.
	Kind SubjectKind `json:"kind"`

	// Name of the user or group, as Armada's authentication reports it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// A QueuePermission lets its subjects perform its verbs on the queue.
type QueuePermission struct {
	// Subjects are the users and groups this permission applies to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Subjects []PermissionSubject `json:"subjects"`

	// Verbs are the actions the subjects may perform on the queue's jobs.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	// +listType=set
	Verbs []PermissionVerb `json:"verbs"`
}

// PoolResourceLimits override a priority class's limits in one pool.
type PoolResourceLimits struct {
	// MaximumResourceFraction maps a resource name (such as cpu, memory or
	// nvidia.com/gpu) to the largest fraction of the pool's capacity of that
	// resource jobs of the priority class may use, from 0 to 1.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	MaximumResourceFraction map[string]Fraction `json:"maximumResourceFraction,omitempty"`
}

// PriorityClassResourceLimits limit what the queue's jobs of one priority
// class may use. When set for a priority class, Armada's global limits for
// that class do not apply to this queue.
type PriorityClassResourceLimits struct {
	// MaximumResourceFraction maps a resource name (such as cpu, memory or
	// nvidia.com/gpu) to the largest fraction of the cluster's capacity of
	// that resource jobs of the priority class may use, from 0 to 1.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	MaximumResourceFraction map[string]Fraction `json:"maximumResourceFraction,omitempty"`

	// MaximumResourceFractionByPool overrides MaximumResourceFraction per
	// pool, keyed by pool name. A pool without an entry uses
	// MaximumResourceFraction.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	MaximumResourceFractionByPool map[string]PoolResourceLimits `json:"maximumResourceFractionByPool,omitempty"`
}

// QueueParameters are the Armada queue's desired settings.
type QueueParameters struct {
	// PriorityFactor scales the queue's share of the cluster: a queue with
	// factor 2 gets half the share of a queue with factor 1. A decimal
	// string of at least 1, such as "1" or "1.5".
	PriorityFactor PriorityFactor `json:"priorityFactor"`

	// UserOwners are the users who own the queue. Armada grants owners every
	// verb. If empty, Armada makes the provider's own user the owner, and
	// the provider copies that user here (late initialisation).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	UserOwners []string `json:"userOwners,omitempty"`

	// GroupOwners are the groups whose members own the queue.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	GroupOwners []string `json:"groupOwners,omitempty"`

	// Permissions grant users and groups verbs on the queue's jobs, in
	// addition to the owners' rights. Compared as a set of (subject, verb)
	// grants, so their order and grouping do not matter.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Permissions []QueuePermission `json:"permissions,omitempty"`

	// ResourceLimitsByPriorityClassName maps a priority class name to the
	// resource limits of the queue's jobs of that class.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	ResourceLimitsByPriorityClassName map[string]PriorityClassResourceLimits `json:"resourceLimitsByPriorityClassName,omitempty"`

	// Labels are key-value labels on the queue, such as
	// armadaproject.io/priority: critical. Armada rejects an empty key or
	// value.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 317 && size(self[k]) > 0 && size(self[k]) <= 256)",message="label keys and values must be 1 to 317 and 1 to 256 characters long"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Cordoned stops Armada from scheduling the queue's jobs while true.
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`

	// RetryPolicies name the retry policies attached to the queue, in
	// precedence order: Armada evaluates the first. Armada rejects names of
	// policies it does not hold. The order matters, so it is compared.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	RetryPolicies []string `json:"retryPolicies,omitempty"`
}

// An ObservedPermission is a permission as Armada holds it. Armada stores a
// queue's owners as a permission with every verb, listed first.
type ObservedPermission struct {
	// Subjects are the users and groups the permission applies to.
	// +optional
	Subjects []ObservedSubject `json:"subjects,omitempty"`
	// Verbs are the actions the subjects may perform.
	// +optional
	Verbs []string `json:"verbs,omitempty"`
}

// An ObservedSubject is a principal as Armada holds it.
type ObservedSubject struct {
	// Kind is User or Group.
	Kind string `json:"kind"`
	// Name of the user or group.
	Name string `json:"name"`
}

// ObservedPoolResourceLimits are one pool's limits as Armada holds them.
type ObservedPoolResourceLimits struct {
	// MaximumResourceFraction maps a resource name to a fraction.
	// +optional
	MaximumResourceFraction map[string]string `json:"maximumResourceFraction,omitempty"`
}

// ObservedPriorityClassResourceLimits are one priority class's limits as
// Armada holds them.
type ObservedPriorityClassResourceLimits struct {
	// MaximumResourceFraction maps a resource name to a fraction.
	// +optional
	MaximumResourceFraction map[string]string `json:"maximumResourceFraction,omitempty"`
	// MaximumResourceFractionByPool holds the per-pool overrides.
	// +optional
	MaximumResourceFractionByPool map[string]ObservedPoolResourceLimits `json:"maximumResourceFractionByPool,omitempty"`
}

// QueueObservation is the queue as Armada last reported it. Armada does not
// keep userOwners and groupOwners apart: it folds them into the first
// permission, which grants every verb.
type QueueObservation struct {
	// Name of the queue in Armada.
	// +optional
	Name string `json:"name,omitempty"`
	// PriorityFactor as Armada holds it.
	// +optional
	PriorityFactor string `json:"priorityFactor,omitempty"`
	// Permissions as Armada holds them, owners first.
	// +optional
	Permissions []ObservedPermission `json:"permissions,omitempty"`
	// ResourceLimitsByPriorityClassName as Armada holds them.
	// +optional
	ResourceLimitsByPriorityClassName map[string]ObservedPriorityClassResourceLimits `json:"resourceLimitsByPriorityClassName,omitempty"`
	// Labels as Armada holds them.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Cordoned is true while Armada schedules none of the queue's jobs.
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`
	// RetryPolicies as Armada holds them, in precedence order.
	// +optional
	RetryPolicies []string `json:"retryPolicies,omitempty"`
}

// QueueSpec is the desired state of a Queue.
type QueueSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	// ForProvider are the queue's settings in Armada.
	ForProvider QueueParameters `json:"forProvider"`
}

// QueueStatus is the observed state of a Queue.
type QueueStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	// AtProvider is the queue as Armada last reported it.
	// +optional
	AtProvider QueueObservation `json:"atProvider,omitempty"`
}

// A Queue is an Armada queue. Its name in Armada is the
// crossplane.io/external-name annotation, which defaults to metadata.name.
// Armada puts the name on every pod it runs for the queue as a label value,
// so it must be a valid label value: at most 63 letters, digits, '-', '_'
// or '.', starting and ending with a letter or digit.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="PRIORITY-FACTOR",type="string",JSONPath=".spec.forProvider.priorityFactor",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,armada}
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired queue.
	Spec QueueSpec `json:"spec"`
	// Status is the queue as observed in Armada.
	Status QueueStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// QueueList is a list of Queues.
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Queues.
	Items []Queue `json:"items"`
}
