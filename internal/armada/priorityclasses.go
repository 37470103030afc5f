package armada

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PriorityClasses: Armada's priority classes (spec.scheduling), composed
// cluster-scoped in this cluster and in every worker cluster.

// PriorityClasses returns the names of the cluster-scoped PriorityClasses
// the install composes. They are the only composed names Armadas in one
// cluster can collide on, so the function asks Crossplane for them.
func (in *Install) PriorityClasses() []string {
	out := make([]string, 0, len(in.Spec.Scheduling.PriorityClasses))
	for _, pc := range in.Spec.Scheduling.PriorityClasses {
		out = append(out, pc.Name)
	}
	return out
}

// priorityClass is a Kubernetes PriorityClass matching an Armada one.
func (in *Install) priorityClass(name string, value int32, preemptible bool) *schedulingv1.PriorityClass {
	policy := corev1.PreemptNever
	if preemptible {
		policy = corev1.PreemptLowerPriority
	}
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: name, Labels: in.labels("priorityclass"), Annotations: in.owner.annotations()},
		Value:            value,
		PreemptionPolicy: &policy,
		Description:      "Armada priority class managed by function-armada for " + in.Namespace + "/" + in.Name,
	}
}

// priorityClasses composes the priority classes in this cluster: through
// provider-kubernetes for a namespaced XR (scope.go). Worker clusters get
// theirs with their other shared objects (remoteClusterObjects).
func (r *renderer) priorityClasses() {
	for _, pc := range r.in.Spec.Scheduling.PriorityClasses {
		key := "priorityclass-" + pc.Name
		r.addClusterScoped(nil, key, r.in.priorityClass(pc.Name, pc.Priority, pc.Preemptible), r.exists(key))
	}
}
