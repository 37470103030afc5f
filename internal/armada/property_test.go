package armada

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// randomSpec is a valid spec with random backing-service modes.
func randomSpec(rng *rand.Rand) v1alpha1.ArmadaSpec {
	s := spec()
	if rng.IntN(2) == 0 {
		s.Postgres = v1alpha1.Postgres{Mode: modeInCluster}
	} else if rng.IntN(2) == 0 {
		s.Postgres.AdminSecretRef = &v1alpha1.LocalSecretRef{Name: "pg-admin"}
	}
	if rng.IntN(2) == 0 {
		s.Redis = v1alpha1.Redis{Mode: modeInCluster}
	}
	if rng.IntN(2) == 0 {
		s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster}
	}
	if rng.IntN(3) == 0 {
		s.DeletionPolicy = deletionDelete
	}
	return s
}

// edit applies one to three random edits a user might make.
func edit(rng *rand.Rand, s v1alpha1.ArmadaSpec) v1alpha1.ArmadaSpec {
	s = *s.DeepCopy()
	for range 1 + rng.IntN(3) {
		switch c := rng.IntN(9); c {
		case 0, 1, 2: // switch a backing service's mode, maybe allowed
			switchMode(&s, c, rng.IntN(2) == 0)
		case 3:
			s.Pulsar.EventsPartitions = 1 + rng.Int32N(8)
		case 4:
			s.Components.Server.Replicas = ptr.To(1 + rng.Int32N(3))
		case 5:
			s.Version = SupportedVersions[rng.IntN(len(SupportedVersions))]
		case 6:
			s.DeletionPolicy = []string{deletionOrphan, deletionDelete}[rng.IntN(2)]
		case 7: // an invalid edit: the function must refuse it, not drop anything
			s.Pulsar.Tenant = "not a tenant"
		case 8: // rename a database, maybe allowed
			s.Postgres.Databases.Lookout = []string{"lookout", "lookout2"}[rng.IntN(2)]
			s.Postgres.AllowDatabaseRename = rng.IntN(2) == 0
		}
	}
	return s
}

// switchMode switches a backing service (0 Postgres, 1 Redis, 2 Pulsar)
// between InCluster and spec()'s External settings, with allowModeChange.
func switchMode(s *v1alpha1.ArmadaSpec, service int, allow bool) {
	base := spec()
	switch service {
	case 0:
		if s.Postgres.Mode == modeInCluster {
			s.Postgres = base.Postgres
		} else {
			s.Postgres = v1alpha1.Postgres{Mode: modeInCluster}
		}
		s.Postgres.AllowModeChange = allow
	case 1:
		if s.Redis.Mode == modeInCluster {
			s.Redis = base.Redis
		} else {
			s.Redis = v1alpha1.Redis{Mode: modeInCluster}
		}
		s.Redis.AllowModeChange = allow
	case 2:
		if s.Pulsar.Mode == modeInCluster {
			s.Pulsar = base.Pulsar
		} else {
			s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster}
		}
		s.Pulsar.AllowModeChange = allow
	}
}

// observe turns rendered objects into a random, partial observation: each
// object is seen or not, and healthy, unhealthy or without status.
func observe(t *testing.T, rng *rand.Rand, out *Output) Observed {
	t.Helper()
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range out.Objects {
		if rng.IntN(4) == 0 {
			continue // not observed (yet, or the observation failed)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		if status, ok := simulate.HealthyStatus(u, time.Unix(0, 0)); ok && rng.IntN(2) == 0 {
			u.Object["status"] = status
		}
		seen[o.Key] = u
	}
	return Observe(seen)
}

// TestStatefulResourcesNeverDropped is a property test: across random
// specs, random edits and random partial observations, a stateful resource
// composed by one reconcile is composed by the next, unless the edit
// switched that service's mode with allowModeChange. A rejected edit
// (an error) composes nothing new, so nothing is dropped either, and the
// error names a field.
func TestStatefulResourcesNeverDropped(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	opts := func(o Observed) Options { return Options{Observed: o, Rand: KeyedRand([]byte("k"), "xr")} }
	checked, dropped, refused := 0, 0, 0
	for i := range 400 {
		before := randomSpec(rng)
		in, errs := New(claimed(before))
		if len(errs) > 0 {
			t.Fatalf("case %d: New(before): %v", i, errs)
		}
		prev, err := Render(in, opts(observe(t, rng, &Output{})))
		if err != nil {
			t.Fatalf("case %d: Render(before): %v", i, err)
		}
		after := edit(rng, before)
		in2, errs := New(claimed(after))
		if len(errs) > 0 {
			refused++
			for _, e := range errs {
				if !strings.HasPrefix(e.Field, "spec.") {
					t.Errorf("case %d: error does not name a spec field: %v", i, e)
				}
			}
			continue
		}
		// Composed resources may be unobserved, but the XR's status, which
		// Crossplane persists, reports the modes the last reconcile
		// composed. (With neither, the XRD's CEL transition rule on
		// spec.*.mode is the guard; the e2e tests prove it.)
		o := observe(t, rng, prev).WithServices(prev.Status.BackingServices)
		next, err := Render(in2, opts(o))
		if err != nil {
			refused++
			if !strings.HasPrefix(err.Error(), "spec.") {
				t.Errorf("case %d: error does not name a spec field: %v", i, err)
			}
			continue
		}
		kept := map[string]bool{}
		for _, o := range next.Objects {
			kept[o.Key] = true
		}
		for _, obj := range prev.Objects {
			if !IsStateful(obj.Key) {
				continue
			}
			checked++
			if kept[obj.Key] {
				continue
			}
			dropped++
			service, _, _ := strings.Cut(obj.Key, "-")
			// Crossplane deletes only what it observes: one not observed
			// does not exist yet, and dropping it creates it never.
			if !modeSwitched(before, after, service) && o.Keys[obj.Key] {
				t.Errorf("case %d: stateful %s dropped without an allowed mode switch of spec.%s or an allowed rename\nbefore: %+v\nafter: %+v", i, obj.Key, service, before, after)
			}
			// Crossplane deletes what it observes, with the policy it
			// carries: that must be the policy the user asks for now.
			if _, seen := o.DeletesData[obj.Key]; seen && protected(t, obj.Object) != (after.DeletionPolicy != deletionDelete) {
				t.Errorf("case %d: stateful %s dropped under spec.deletionPolicy %s, but it was composed under %s", i, obj.Key, after.DeletionPolicy, before.DeletionPolicy)
			}
		}
	}
	t.Logf("%d stateful resources checked; %d dropped, each by an allowed mode switch; %d edits refused with a field error", checked, dropped, refused)
	if checked == 0 || refused == 0 {
		t.Error("the generator exercised neither stateful resources nor refusals")
	}
}

// protected reports whether deleting a composed stateful object leaves its
// data: a managed resource without the Delete management policy, a
// CloudNativePG Database that retains its database, a StatefulSet that
// retains its volumes.
func protected(t *testing.T, o client.Object) bool {
	t.Helper()
	if sts, ok := o.(*appsv1.StatefulSet); ok {
		p := sts.Spec.PersistentVolumeClaimRetentionPolicy
		return p != nil && p.WhenDeleted == appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("unexpected stateful type %T", o)
	}
	if u.GetAPIVersion() == apiCNPG && u.GetKind() == "Database" {
		reclaim, _, _ := unstructured.NestedString(u.Object, "spec", "databaseReclaimPolicy")
		return reclaim == "retain"
	}
	policies, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "managementPolicies")
	return found && !slices.Contains(policies, "Delete") && !slices.Contains(policies, "*")
}

// modeSwitched reports whether a service's mode changed with
// allowModeChange set, or (for Postgres) the external database creation
// was given up, or a database renamed under Orphan or with
// allowDatabaseRename.
func modeSwitched(before, after v1alpha1.ArmadaSpec, service string) bool {
	switch service {
	case "postgres":
		changed := before.Postgres.Mode != after.Postgres.Mode || (before.Postgres.AdminSecretRef != nil && after.Postgres.AdminSecretRef == nil)
		renamed := before.Postgres.Databases != after.Postgres.Databases && (after.DeletionPolicy != deletionDelete || after.Postgres.AllowDatabaseRename)
		return (changed && after.Postgres.AllowModeChange) || renamed
	case "redis":
		return before.Redis.Mode != after.Redis.Mode && after.Redis.AllowModeChange
	case "pulsar":
		return before.Pulsar.Mode != after.Pulsar.Mode && after.Pulsar.AllowModeChange
	}
	return false
}
