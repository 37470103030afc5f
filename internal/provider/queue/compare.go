package queue

import (
	"maps"
	"math"
	"slices"

	"github.com/armadaproject/armada/pkg/api"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// tolerance is the relative difference below which two floats are equal:
// a decimal string and the float64 Armada stores for it may differ in the
// last bits.
const tolerance = 1e-9

// floatEqual reports whether a and b are equal within tolerance.
func floatEqual(a, b float64) bool {
	return math.Abs(a-b) <= tolerance*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// A grant is one verb granted to one subject.
type grant struct{ kind, name, verb string }

// grants returns the set of (subject, verb) grants q holds. Owners get
// every verb, as Armada records them; the grouping of subjects and verbs
// into permissions, their order and duplicates do not matter.
func grants(q *api.Queue) map[grant]bool {
	out := map[grant]bool{}
	for _, v := range armadav1.AllVerbs {
		for _, u := range q.GetUserOwners() {
			out[grant{kind: string(armadav1.SubjectKindUser), name: u, verb: string(v)}] = true
		}
		for _, g := range q.GetGroupOwners() {
			out[grant{kind: string(armadav1.SubjectKindGroup), name: g, verb: string(v)}] = true
		}
	}
	for _, p := range q.GetPermissions() {
		for _, s := range p.GetSubjects() {
			for _, v := range p.GetVerbs() {
				out[grant{kind: s.GetKind(), name: s.GetName(), verb: v}] = true
			}
		}
	}
	return out
}

// A limitKey addresses one resource fraction: priority class, pool (empty
// for the class-wide limit) and resource. A key with an empty resource
// records that the class (or the class's pool) has an entry at all, which
// matters: an entry, even an empty one, replaces Armada's global limits.
type limitKey struct{ class, pool, resource string }

// limits flattens q's resource limits.
func limits(q *api.Queue) map[limitKey]float64 {
	out := map[limitKey]float64{}
	for pc, l := range q.GetResourceLimitsByPriorityClassName() {
		if l == nil {
			continue
		}
		out[limitKey{class: pc}] = 0
		for r, f := range l.GetMaximumResourceFraction() {
			out[limitKey{class: pc, resource: r}] = f
		}
		for pool, pl := range l.GetMaximumResourceFractionByPool() {
			if pl == nil {
				continue
			}
			out[limitKey{class: pc, pool: pool}] = 0
			for r, f := range pl.GetMaximumResourceFraction() {
				out[limitKey{class: pc, pool: pool, resource: r}] = f
			}
		}
	}
	return out
}

// Diff returns the names of the fields in which got, the queue Armada
// holds, differs from want, the desired queue; nil when it is up to date.
// Owners and permissions are compared as sets of grants, maps regardless
// of order, and numbers within a small tolerance. Retry policies are
// compared in order, because Armada applies the first that matches.
func Diff(want, got *api.Queue) []string {
	var diff []string
	if !floatEqual(want.GetPriorityFactor(), got.GetPriorityFactor()) {
		diff = append(diff, "priorityFactor")
	}
	if !maps.Equal(grants(want), grants(got)) {
		diff = append(diff, "permissions")
	}
	if !maps.EqualFunc(limits(want), limits(got), floatEqual) {
		diff = append(diff, "resourceLimitsByPriorityClassName")
	}
	if !maps.Equal(want.GetLabels(), got.GetLabels()) {
		diff = append(diff, "labels")
	}
	if want.GetCordoned() != got.GetCordoned() {
		diff = append(diff, "cordoned")
	}
	if !slices.Equal(want.GetRetryPolicies(), got.GetRetryPolicies()) {
		diff = append(diff, "retryPolicies")
	}
	return diff
}

// LateInitialize fills in p's userOwners from got, the queue Armada holds,
// when p leaves them empty. Armada then makes the creating user the owner
// and records the owners as the first permission, with every verb. It
// reports whether it changed p.
func LateInitialize(p *armadav1.QueueParameters, got *api.Queue) bool {
	if len(p.UserOwners) > 0 || len(got.GetPermissions()) == 0 {
		return false
	}
	first := got.GetPermissions()[0]
	if !allVerbs(first.GetVerbs()) {
		return false
	}
	var users []string
	for _, s := range first.GetSubjects() {
		if s.GetKind() == string(armadav1.SubjectKindUser) {
			users = append(users, s.GetName())
		}
	}
	if len(users) == 0 {
		return false
	}
	p.UserOwners = users
	return true
}

// allVerbs reports whether verbs holds every verb Armada knows.
func allVerbs(verbs []string) bool {
	for _, v := range armadav1.AllVerbs {
		if !slices.Contains(verbs, string(v)) {
			return false
		}
	}
	return true
}
