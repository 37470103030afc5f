package queue

import (
	"testing"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

func TestToAPI(t *testing.T) {
	full := armadav1.QueueParameters{
		PriorityFactor: "1.5",
		UserOwners:     []string{"alice"},
		GroupOwners:    []string{"team"},
		Permissions: []armadav1.QueuePermission{{
			Subjects: []armadav1.PermissionSubject{{Kind: armadav1.SubjectKindGroup, Name: "ops"}},
			Verbs:    []armadav1.PermissionVerb{armadav1.VerbCancel, armadav1.VerbWatch},
		}},
		ResourceLimitsByPriorityClassName: map[string]armadav1.PriorityClassResourceLimits{
			"armada-default": {
				MaximumResourceFraction:       map[string]armadav1.Fraction{"cpu": "0.5", "memory": "1"},
				MaximumResourceFractionByPool: map[string]armadav1.PoolResourceLimits{"gpu": {MaximumResourceFraction: map[string]armadav1.Fraction{"nvidia.com/gpu": "0.25"}}},
			},
		},
		Labels:        map[string]string{"armadaproject.io/priority": "critical"},
		Cordoned:      true,
		RetryPolicies: []string{"p1", "p2"},
	}
	cases := map[string]struct {
		reason string
		params armadav1.QueueParameters
		want   *api.Queue
		err    error
	}{
		"AllFields": {
			reason: "Every field maps onto Armada's Queue message.",
			params: full,
			want: &api.Queue{
				Name: "q", PriorityFactor: 1.5, UserOwners: []string{"alice"}, GroupOwners: []string{"team"},
				Permissions: []*api.Queue_Permissions{{Subjects: []*api.Queue_Permissions_Subject{group("ops")}, Verbs: []string{"cancel", "watch"}}},
				ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
					"armada-default": {
						MaximumResourceFraction: map[string]float64{"cpu": 0.5, "memory": 1},
						MaximumResourceFractionByPool: map[string]*api.PriorityClassPoolResourceLimits{
							"gpu": {MaximumResourceFraction: map[string]float64{"nvidia.com/gpu": 0.25}},
						},
					},
				},
				Labels: map[string]string{"armadaproject.io/priority": "critical"}, Cordoned: true, RetryPolicies: []string{"p1", "p2"},
			},
		},
		"PriorityFactorBelowOne": {
			reason: "Armada rejects a priority factor below 1, so the provider does too.",
			params: armadav1.QueueParameters{PriorityFactor: "0.5"},
			err:    cmpopts.AnyError,
		},
		"FractionAboveOne": {
			reason: "Fractions must be within [0, 1].",
			params: armadav1.QueueParameters{PriorityFactor: "1", ResourceLimitsByPriorityClassName: map[string]armadav1.PriorityClassResourceLimits{
				"pc": {MaximumResourceFraction: map[string]armadav1.Fraction{"cpu": "1.5"}},
			}},
			err: cmpopts.AnyError,
		},
		"NotANumber": {
			reason: "A priority factor that is not a number is an error.",
			params: armadav1.QueueParameters{PriorityFactor: "many"},
			err:    cmpopts.AnyError,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ToAPI("q", tc.params)
			if d := cmp.Diff(tc.err, err, cmpopts.EquateErrors()); d != "" {
				t.Errorf("%s\nToAPI(...): -want error, +got error:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nToAPI(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestObservationRoundTrip(t *testing.T) {
	// What Armada reports for a queue created from the parameters must
	// read back as the same decimal strings the user wrote.
	q := &api.Queue{
		Name: "q", PriorityFactor: 1.1,
		Permissions: []*api.Queue_Permissions{{Subjects: []*api.Queue_Permissions_Subject{user("alice")}, Verbs: all}},
		ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
			"pc": {
				MaximumResourceFraction:       map[string]float64{"cpu": 0.3},
				MaximumResourceFractionByPool: map[string]*api.PriorityClassPoolResourceLimits{"p": {MaximumResourceFraction: map[string]float64{"memory": 1}}},
			},
		},
		Labels: map[string]string{"k": "v"}, Cordoned: true, RetryPolicies: []string{"r"},
	}
	want := armadav1.QueueObservation{
		Name: "q", PriorityFactor: "1.1",
		Permissions: []armadav1.ObservedPermission{{Subjects: []armadav1.ObservedSubject{{Kind: "User", Name: "alice"}}, Verbs: all}},
		ResourceLimitsByPriorityClassName: map[string]armadav1.ObservedPriorityClassResourceLimits{
			"pc": {
				MaximumResourceFraction:       map[string]string{"cpu": "0.3"},
				MaximumResourceFractionByPool: map[string]armadav1.ObservedPoolResourceLimits{"p": {MaximumResourceFraction: map[string]string{"memory": "1"}}},
			},
		},
		Labels: map[string]string{"k": "v"}, Cordoned: true, RetryPolicies: []string{"r"},
	}
	if d := cmp.Diff(want, Observation(q)); d != "" {
		t.Errorf("Observation(...): -want, +got:\n%s", d)
	}
}

func TestName(t *testing.T) {
	cases := map[string]struct {
		reason string
		meta   map[string]string
		name   string
		want   string
		err    error
	}{
		"MetadataName":     {reason: "Without an external name the queue is named after the object.", name: "team-a", want: "team-a"},
		"ExternalName":     {reason: "The external name wins.", name: "obj", meta: map[string]string{"crossplane.io/external-name": "Team_A.gpu"}, want: "Team_A.gpu"},
		"TooLong":          {reason: "Armada labels pods with the name, so it must fit a label value.", name: "a23456789012345678901234567890123456789012345678901234567890abcd", err: cmpopts.AnyError},
		"InvalidCharacter": {reason: "A slash would break Armada's REST paths and pod labels.", name: "obj", meta: map[string]string{"crossplane.io/external-name": "a/b"}, err: cmpopts.AnyError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &armadav1.Queue{}
			cr.SetName(tc.name)
			cr.SetAnnotations(tc.meta)
			got, err := Name(cr)
			if d := cmp.Diff(tc.err, err, cmpopts.EquateErrors()); d != "" {
				t.Errorf("%s\nName(...): -want error, +got error:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nName(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}
