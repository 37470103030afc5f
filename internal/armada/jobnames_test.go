package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// jobNames maps each composed Job's composition resource name to its name,
// with every database ready so the migrations are composed.
func jobNames(t *testing.T, s v1alpha1.ArmadaSpec) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, o := range render(t, s, Observed{Jobs: migrated(t, s)}).Objects {
		if j, ok := o.Object.(*batchv1.Job); ok {
			names[o.Key] = j.Name
		}
	}
	return names
}

// A Job's template cannot be edited, so a Job must be renamed whenever its
// pod spec changes, or Crossplane fails to apply it for good (seen with a
// change of image registry); a change that leaves its pod spec alone keeps
// the Job, which is not run again.
func TestJobsRenamedWhenTheirPodSpecChanges(t *testing.T) {
	before := jobNames(t, spec())
	if len(before) != 3 {
		t.Fatalf("composed Jobs: %v, want the topic-init Job and two migrations", before)
	}
	cases := map[string]struct {
		reason  string
		mod     func(*v1alpha1.ArmadaSpec)
		renamed bool
	}{
		"ImageRegistry": {
			reason:  "A registry move changes every Job's image.",
			mod:     func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "registry.example.com/mirror" },
			renamed: true,
		},
		"ServerReplicas": {
			reason: "The server's replicas are in no Job's pod spec.",
			mod:    func(s *v1alpha1.ArmadaSpec) { s.Components.Server.Replicas = ptr.To[int32](3) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			after := jobNames(t, spec(tc.mod))
			if tc.renamed {
				// Each Job has a new composition resource name, or keeps it and
				// has a new name (the topic-init Job).
				if diff := cmp.Diff(len(before), len(after)); diff != "" {
					t.Fatalf("%s\nnumber of Jobs (-before +after):\n%s", tc.reason, diff)
				}
				for key, was := range before {
					if after[key] == was {
						t.Errorf("%s\nJob %s kept its name %s", tc.reason, key, was)
					}
				}
				return
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("%s\nJob names (-before +after):\n%s", tc.reason, diff)
			}
		})
	}
}
