package armada

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// labelComposite is the label Crossplane puts on every composed resource,
// naming the composite resource that controls it.
const labelComposite = "crossplane.io/composite"

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

// CheckPriorityClassOwners refuses priority class names whose existing
// PriorityClass another composite resource controls. owners maps a
// PriorityClass name to the value of its crossplane.io/composite label;
// xr is this composite resource's name. Without this check Crossplane
// would report an apply conflict on an object the user never named.
func (in *Install) CheckPriorityClassOwners(xr string, owners map[string]string) field.ErrorList {
	var errs field.ErrorList
	for i, pc := range in.Spec.Scheduling.PriorityClasses {
		owner, ok := owners[pc.Name]
		if !ok || owner == "" || owner == xr {
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "scheduling", "priorityClasses").Index(i).Child("name"), pc.Name,
			fmt.Sprintf("PriorityClass %s already belongs to XArmada %s; PriorityClasses are cluster-wide, "+
				"so choose names no other Armada in this cluster uses", pc.Name, owner)))
	}
	return errs
}

// OwnerOf returns the composite resource that controls a composed object,
// from its labels.
func OwnerOf(labels map[string]string) string { return labels[labelComposite] }
