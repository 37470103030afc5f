package armada

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
