package queue

import (
	"testing"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/google/go-cmp/cmp"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// all is every verb, as Armada grants owners.
var all = []string{"submit", "cancel", "preempt", "reprioritize", "watch"}

func user(n string) *api.Queue_Permissions_Subject {
	return &api.Queue_Permissions_Subject{Kind: "User", Name: n}
}

func group(n string) *api.Queue_Permissions_Subject {
	return &api.Queue_Permissions_Subject{Kind: "Group", Name: n}
}

func TestDiff(t *testing.T) {
	cases := map[string]struct {
		reason    string
		want, got *api.Queue
		diff      []string
	}{
		"OwnersFoldedIntoPermissions": {
			reason: "Armada records owners as a permission with every verb; that is no drift.",
			want: &api.Queue{
				PriorityFactor: 1, UserOwners: []string{"alice"}, GroupOwners: []string{"team"},
				Permissions: []*api.Queue_Permissions{{Subjects: []*api.Queue_Permissions_Subject{group("ops")}, Verbs: []string{"watch", "cancel"}}},
			},
			got: &api.Queue{
				PriorityFactor: 1,
				Permissions: []*api.Queue_Permissions{
					{Subjects: []*api.Queue_Permissions_Subject{user("alice"), group("team")}, Verbs: all},
					{Subjects: []*api.Queue_Permissions_Subject{group("ops")}, Verbs: []string{"cancel", "watch"}},
				},
			},
		},
		"PermissionsRegrouped": {
			reason: "Permissions are a set of grants: grouping, order and duplicates do not matter.",
			want: &api.Queue{PriorityFactor: 2, Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("a"), user("b")}, Verbs: []string{"submit"}},
			}},
			got: &api.Queue{PriorityFactor: 2, Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("b")}, Verbs: []string{"submit", "submit"}},
				{Subjects: []*api.Queue_Permissions_Subject{user("a")}, Verbs: []string{"submit"}},
			}},
		},
		"VerbRemovedBehindOurBack": {
			reason: "A missing grant is drift.",
			want: &api.Queue{PriorityFactor: 1, Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("a")}, Verbs: []string{"submit", "watch"}},
			}},
			got: &api.Queue{PriorityFactor: 1, Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("a")}, Verbs: []string{"submit"}},
			}},
			diff: []string{"permissions"},
		},
		"FloatTolerance": {
			reason: "Priority factors and fractions equal within a tolerance are equal.",
			want: &api.Queue{PriorityFactor: 1.1, ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
				"pc": {MaximumResourceFraction: map[string]float64{"cpu": 0.3}},
			}},
			got: &api.Queue{PriorityFactor: 1.1000000000000001, ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
				"pc": {MaximumResourceFraction: map[string]float64{"cpu": 0.1 + 0.2}},
			}},
		},
		"EverythingDrifted": {
			reason: "Each drifted field is named once, in a stable order.",
			want: &api.Queue{
				PriorityFactor: 1, Labels: map[string]string{"a": "b"}, RetryPolicies: []string{"p1", "p2"},
				ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{"pc": {}},
			},
			got:  &api.Queue{PriorityFactor: 3, Cordoned: true, RetryPolicies: []string{"p2", "p1"}},
			diff: []string{"priorityFactor", "resourceLimitsByPriorityClassName", "labels", "cordoned", "retryPolicies"},
		},
		"PoolLimits": {
			reason: "A per-pool limit is compared by class, pool and resource.",
			want: &api.Queue{PriorityFactor: 1, ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
				"pc": {MaximumResourceFractionByPool: map[string]*api.PriorityClassPoolResourceLimits{"gpu": {MaximumResourceFraction: map[string]float64{"nvidia.com/gpu": 0.5}}}},
			}},
			got: &api.Queue{PriorityFactor: 1, ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
				"pc": {MaximumResourceFractionByPool: map[string]*api.PriorityClassPoolResourceLimits{"cpu": {MaximumResourceFraction: map[string]float64{"nvidia.com/gpu": 0.5}}}},
			}},
			diff: []string{"resourceLimitsByPriorityClassName"},
		},
		"NilAndEmptyAreEqual": {
			reason: "Absent and empty maps and lists are the same.",
			want:   &api.Queue{PriorityFactor: 1, Labels: map[string]string{}, RetryPolicies: []string{}},
			got:    &api.Queue{PriorityFactor: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diff(tc.want, tc.got)
			if d := cmp.Diff(tc.diff, got); d != "" {
				t.Errorf("%s\nDiff(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestLateInitialize(t *testing.T) {
	cases := map[string]struct {
		reason  string
		params  armadav1.QueueParameters
		got     *api.Queue
		want    armadav1.QueueParameters
		changed bool
	}{
		"CreatorBecameOwner": {
			reason: "With no userOwners Armada makes the creator the owner; copy that user into the spec.",
			got: &api.Queue{Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("provider"), group("team")}, Verbs: all},
			}},
			params:  armadav1.QueueParameters{GroupOwners: []string{"team"}},
			want:    armadav1.QueueParameters{GroupOwners: []string{"team"}, UserOwners: []string{"provider"}},
			changed: true,
		},
		"OwnersSet": {
			reason: "userOwners the user set are never overwritten.",
			got: &api.Queue{Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("someone")}, Verbs: all},
			}},
			params: armadav1.QueueParameters{UserOwners: []string{"alice"}},
			want:   armadav1.QueueParameters{UserOwners: []string{"alice"}},
		},
		"FirstPermissionIsNotOwners": {
			reason: "A first permission without every verb is not an owners entry.",
			got: &api.Queue{Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{user("a")}, Verbs: []string{"watch"}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.params
			changed := LateInitialize(&p, tc.got)
			if d := cmp.Diff(tc.want, p); d != "" {
				t.Errorf("%s\nLateInitialize(...): -want params, +got params:\n%s", tc.reason, d)
			}
			if changed != tc.changed {
				t.Errorf("%s\nLateInitialize(...): want changed %t, got %t", tc.reason, tc.changed, changed)
			}
		})
	}
}
