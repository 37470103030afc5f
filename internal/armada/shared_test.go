package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCheckPriorityClassOwners(t *testing.T) {
	path := field.NewPath("spec", "scheduling", "priorityClasses")
	cases := map[string]struct {
		reason string
		owners map[string]string
		want   field.ErrorList
	}{
		"NoneExist": {reason: "New names are free.", owners: map[string]string{}},
		"OwnedByUs": {reason: "Our own PriorityClasses are fine.", owners: map[string]string{"armada-default": "armada-x"}},
		"Unowned":   {reason: "An existing PriorityClass no XR controls is adopted.", owners: map[string]string{"armada-default": ""}},
		"OwnedByAnother": {
			reason: "Another Armada's PriorityClass is refused with the field named.",
			owners: map[string]string{"armada-armada-0abc57-preemptible": "other-y"},
			want:   field.ErrorList{field.Invalid(path.Index(1).Child("name"), "armada-armada-0abc57-preemptible", "")},
		},
	}
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"armada-armada-0abc57-default", "armada-armada-0abc57-preemptible"}, in.PriorityClasses()); diff != "" {
		t.Errorf("PriorityClasses(): -want, +got:\n%s", diff)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := in.CheckPriorityClassOwners("armada-x", tc.owners)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(field.Error{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nCheckPriorityClassOwners(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
