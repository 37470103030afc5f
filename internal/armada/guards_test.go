package armada

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// observeAll observes every object a render composed, as it was composed,
// with the XR status it reported.
func observeAll(t *testing.T, out *Output) Observed {
	t.Helper()
	return Observe(seenAll(t, out, false)).WithServices(out.Status.BackingServices)
}

// seenAll is every object of out as observed, by composition resource
// name; healthy ones with the status a healthy object reports.
func seenAll(t *testing.T, out *Output, healthy bool) map[string]*unstructured.Unstructured {
	t.Helper()
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range out.Objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		if status, ok := simulate.HealthyStatus(u, time.Unix(0, 0)); ok && healthy {
			u.Object["status"] = status
		}
		seen[o.Key] = u
	}
	return seen
}

// TestDataGuards: each edit that would lose data the user did not clearly
// ask to lose is refused naming its fields; the edits that ask are not.
func TestDataGuards(t *testing.T) {
	inCluster := func(policy string) v1alpha1.ArmadaSpec {
		return spec(func(s *v1alpha1.ArmadaSpec) {
			s.Postgres = v1alpha1.Postgres{Mode: modeInCluster}
			s.Redis = v1alpha1.Redis{Mode: modeInCluster}
			s.DeletionPolicy = policy
		})
	}
	cases := map[string]struct {
		reason string
		before v1alpha1.ArmadaSpec
		// unobserved renders after with only the XR's status, as if no
		// composed resource were observed.
		unobserved bool
		after      func(*v1alpha1.ArmadaSpec)
		want       string // a substring of the refusal; empty means accepted
	}{
		"RenameUnderDelete": {
			reason: "Renaming a database under Delete would drop the old one and its data.",
			before: inCluster(deletionDelete),
			after:  func(s *v1alpha1.ArmadaSpec) { s.Postgres.Databases.Lookout = "lookout2" },
			want:   "spec.postgres.databases: Forbidden: the rename leaves database resource postgres-cnpg-db-lookout out",
		},
		"RenameUnderDeleteAllowed": {
			reason: "allowDatabaseRename asks for the drop.",
			before: inCluster(deletionDelete),
			after: func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Databases.Lookout = "lookout2"
				s.Postgres.AllowDatabaseRename = true
			},
		},
		"RenameUnderOrphan": {
			reason: "Under Orphan the old database stays in place: no permission needed.",
			before: inCluster(deletionOrphan),
			after:  func(s *v1alpha1.ArmadaSpec) { s.Postgres.Databases.Lookout = "lookout2" },
		},
		"RenameWhileTurningToOrphan": {
			reason: "Orphan and a rename in one apply: the old Database still drops its data when deleted.",
			before: inCluster(deletionDelete),
			after: func(s *v1alpha1.ArmadaSpec) {
				s.DeletionPolicy = deletionOrphan
				s.Postgres.Databases.Lookout = "lookout2"
			},
			want: "spec.deletionPolicy, spec.postgres.databases: Forbidden: one apply changes spec.deletionPolicy to Orphan and drops postgres-cnpg-db-lookout, which carries deletionPolicy Delete",
		},
		"SwitchWhileTurningToOrphan": {
			reason: "Orphan and a mode switch in one apply: Crossplane would delete Redis's volume under the old policy.",
			before: inCluster(deletionDelete),
			after: func(s *v1alpha1.ArmadaSpec) {
				s.DeletionPolicy = deletionOrphan
				s.Redis = v1alpha1.Redis{Addrs: []string{"redis:6379"}, AllowModeChange: true}
			},
			want: "spec.deletionPolicy, spec.redis.mode: Forbidden",
		},
		"SwitchWhileTurningToOrphanUnobserved": {
			reason: "Without observed resources the XR's status tells the policy they were composed with.",
			before: inCluster(deletionDelete), unobserved: true,
			after: func(s *v1alpha1.ArmadaSpec) {
				s.DeletionPolicy = deletionOrphan
				s.Redis = v1alpha1.Redis{Addrs: []string{"redis:6379"}, AllowModeChange: true}
			},
			want: "spec.deletionPolicy, spec.redis.mode: Forbidden: one apply changes spec.deletionPolicy to Orphan and drops redis's InCluster resources, which carries deletionPolicy Delete",
		},
		"SwitchWhileTurningToDelete": {
			reason: "The other way round is refused too: the user asked for Delete and would get Orphan.",
			before: inCluster(deletionOrphan),
			after: func(s *v1alpha1.ArmadaSpec) {
				s.DeletionPolicy = deletionDelete
				s.Redis = v1alpha1.Redis{Addrs: []string{"redis:6379"}, AllowModeChange: true}
			},
			want: "spec.deletionPolicy, spec.redis.mode: Forbidden",
		},
		"SwitchUnderUnchangedPolicy": {
			reason: "An allowed switch under the policy the resources carry proceeds.",
			before: inCluster(deletionDelete),
			after: func(s *v1alpha1.ArmadaSpec) {
				s.Redis = v1alpha1.Redis{Addrs: []string{"redis:6379"}, AllowModeChange: true}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prev := render(t, tc.before, Observed{Jobs: migrated(t, tc.before)})
			o := observeAll(t, prev)
			if tc.unobserved {
				o = Observed{}.WithServices(prev.Status.BackingServices)
			}
			after := *tc.before.DeepCopy()
			tc.after(&after)
			in, errs := New(claimed(after))
			if len(errs) > 0 {
				t.Fatalf("New(after): %v", errs)
			}
			_, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("k"), "xr")})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s\nRender(after): want refusal containing %q, got %q", tc.reason, tc.want, got)
			}
		})
	}
}

// TestAllowModeChangeAllowsOneSwitch: allowModeChange allows the switch it
// was set for, records it in status while it stays set, refuses a second
// switch while the record is there, and clears the record once it is
// unset.
func TestAllowModeChangeAllowsOneSwitch(t *testing.T) {
	external := spec()
	inCluster := spec(func(s *v1alpha1.ArmadaSpec) { s.Redis = v1alpha1.Redis{Mode: modeInCluster, AllowModeChange: true} })
	backToExternal := spec(func(s *v1alpha1.ArmadaSpec) { s.Redis.AllowModeChange = true })

	// One switch, External to InCluster: accepted and recorded.
	prev := render(t, external, Observed{})
	first := render(t, inCluster, observeAll(t, prev))
	if got := first.Status.BackingServices[serviceRedis].ModeChangedTo; got != modeInCluster {
		t.Fatalf("after the allowed switch: status.backingServices.redis.modeChangedTo = %q, want %q", got, modeInCluster)
	}
	// While allowModeChange stays set, the record stays.
	again := render(t, inCluster, observeAll(t, first))
	if got := again.Status.BackingServices[serviceRedis].ModeChangedTo; got != modeInCluster {
		t.Fatalf("a later reconcile: status.backingServices.redis.modeChangedTo = %q, want %q kept", got, modeInCluster)
	}
	// A second switch with the same allowModeChange: refused.
	in, errs := New(claimed(backToExternal))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, err := Render(in, Options{Observed: observeAll(t, again), Rand: KeyedRand([]byte("k"), "xr")})
	want := "spec.redis.allowModeChange: Forbidden: it allowed the switch to InCluster and allows one switch, not this one from InCluster to External"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second switch under the same allowModeChange: want %q, got %v", want, err)
	}
	// allowModeChange unset: the record clears, and a new one allows the
	// next switch.
	settled := *inCluster.DeepCopy()
	settled.Redis.AllowModeChange = false
	cleared := render(t, settled, observeAll(t, again))
	if diff := cmp.Diff("", cleared.Status.BackingServices[serviceRedis].ModeChangedTo); diff != "" {
		t.Fatalf("allowModeChange unset: modeChangedTo -want, +got:\n%s", diff)
	}
	next := render(t, backToExternal, observeAll(t, cleared))
	if got := next.Status.BackingServices[serviceRedis].ModeChangedTo; got != modeExternal {
		t.Errorf("the next allowed switch: modeChangedTo = %q, want %q", got, modeExternal)
	}
}
