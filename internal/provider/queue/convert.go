package queue

import (
	"math"
	"strconv"

	"github.com/armadaproject/armada/pkg/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// parseDecimal parses a decimal string the schema has already checked.
func parseDecimal(field, s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.Errorf("%s: %q is not a decimal number", field, s)
	}
	return f, nil
}

// formatDecimal writes f as the shortest decimal that parses back to it.
func formatDecimal(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// parseFractions parses a map of resource fractions, each in [0, 1].
func parseFractions(field string, in map[string]armadav1.Fraction) (map[string]float64, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]float64, len(in))
	for r, s := range in {
		f, err := parseDecimal(field+"["+r+"]", string(s))
		if err != nil {
			return nil, err
		}
		if f < 0 || f > 1 {
			return nil, errors.Errorf("%s[%s]: %s is not between 0 and 1", field, r, s)
		}
		out[r] = f
	}
	return out, nil
}

// ToAPI returns the queue named name with parameters p, as Armada's API
// takes it.
func ToAPI(name string, p armadav1.QueueParameters) (*api.Queue, error) {
	pf, err := parseDecimal("priorityFactor", string(p.PriorityFactor))
	if err != nil {
		return nil, err
	}
	if pf < 1 {
		return nil, errors.Errorf("priorityFactor: %s is below 1", p.PriorityFactor)
	}
	q := &api.Queue{
		Name:           name,
		PriorityFactor: pf,
		UserOwners:     p.UserOwners,
		GroupOwners:    p.GroupOwners,
		Cordoned:       p.Cordoned,
		Labels:         p.Labels,
		RetryPolicies:  p.RetryPolicies,
	}
	for _, perm := range p.Permissions {
		ap := &api.Queue_Permissions{}
		for _, s := range perm.Subjects {
			ap.Subjects = append(ap.Subjects, &api.Queue_Permissions_Subject{Kind: string(s.Kind), Name: s.Name})
		}
		for _, v := range perm.Verbs {
			ap.Verbs = append(ap.Verbs, string(v))
		}
		q.Permissions = append(q.Permissions, ap)
	}
	if p.ResourceLimitsByPriorityClassName != nil {
		q.ResourceLimitsByPriorityClassName = make(map[string]*api.PriorityClassResourceLimits, len(p.ResourceLimitsByPriorityClassName))
	}
	for pc, l := range p.ResourceLimitsByPriorityClassName {
		field := "resourceLimitsByPriorityClassName[" + pc + "]"
		mrf, err := parseFractions(field+".maximumResourceFraction", l.MaximumResourceFraction)
		if err != nil {
			return nil, err
		}
		al := &api.PriorityClassResourceLimits{MaximumResourceFraction: mrf}
		if l.MaximumResourceFractionByPool != nil {
			al.MaximumResourceFractionByPool = make(map[string]*api.PriorityClassPoolResourceLimits, len(l.MaximumResourceFractionByPool))
		}
		for pool, pl := range l.MaximumResourceFractionByPool {
			f, err := parseFractions(field+".maximumResourceFractionByPool["+pool+"].maximumResourceFraction", pl.MaximumResourceFraction)
			if err != nil {
				return nil, err
			}
			al.MaximumResourceFractionByPool[pool] = &api.PriorityClassPoolResourceLimits{MaximumResourceFraction: f}
		}
		q.ResourceLimitsByPriorityClassName[pc] = al
	}
	return q, nil
}

// formatFractions formats a map of fractions.
func formatFractions(in map[string]float64) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = formatDecimal(v)
	}
	return out
}

// Observation returns what Armada holds for q, for status.atProvider.
func Observation(q *api.Queue) armadav1.QueueObservation {
	o := armadav1.QueueObservation{
		Name:           q.GetName(),
		PriorityFactor: formatDecimal(q.GetPriorityFactor()),
		Cordoned:       q.GetCordoned(),
		Labels:         q.GetLabels(),
		RetryPolicies:  q.GetRetryPolicies(),
	}
	for _, p := range q.GetPermissions() {
		op := armadav1.ObservedPermission{Verbs: p.GetVerbs()}
		for _, s := range p.GetSubjects() {
			op.Subjects = append(op.Subjects, armadav1.ObservedSubject{Kind: s.GetKind(), Name: s.GetName()})
		}
		o.Permissions = append(o.Permissions, op)
	}
	if len(q.GetResourceLimitsByPriorityClassName()) > 0 {
		o.ResourceLimitsByPriorityClassName = map[string]armadav1.ObservedPriorityClassResourceLimits{}
	}
	for pc, l := range q.GetResourceLimitsByPriorityClassName() {
		ol := armadav1.ObservedPriorityClassResourceLimits{MaximumResourceFraction: formatFractions(l.GetMaximumResourceFraction())}
		for pool, pl := range l.GetMaximumResourceFractionByPool() {
			if ol.MaximumResourceFractionByPool == nil {
				ol.MaximumResourceFractionByPool = map[string]armadav1.ObservedPoolResourceLimits{}
			}
			ol.MaximumResourceFractionByPool[pool] = armadav1.ObservedPoolResourceLimits{MaximumResourceFraction: formatFractions(pl.GetMaximumResourceFraction())}
		}
		o.ResourceLimitsByPriorityClassName[pc] = ol
	}
	return o
}
