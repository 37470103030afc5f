package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// TestBackingServices applies the examples with in-cluster, external and
// mixed backing services: the API server accepts every composed provider
// and CloudNativePG object against the pinned CRDs, provider-kubernetes
// creates the CloudNativePG Cluster the function wraps in an Object, the
// claim becomes Ready once the services report ready, and the claim's
// status reports each service. all-external's PostgreSQL is a private
// server: provider-sql creates its databases there, and their readiness
// is provider-sql's, not simulated.
func TestBackingServices(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		example string
		modes   map[string]string
		kinds   []string
	}{
		{"all-in-cluster", map[string]string{"postgres": "InCluster", "redis": "InCluster", "pulsar": "InCluster"}, []string{"Object", "Database", "Release", "StatefulSet", "Job"}},
		{"all-external", map[string]string{"postgres": "External", "redis": "External", "pulsar": "External"}, []string{"ProviderConfig", "Database", "Job"}},
		{"mixed", map[string]string{"postgres": "InCluster", "redis": "External", "pulsar": "External"}, []string{"Object", "Database", "Job"}},
	} {
		t.Run(tc.example, func(t *testing.T) {
			ns := "e2e-" + tc.example
			docs := exampleDocs(t, tc.example, ns)
			var pg *testenv.Postgres
			if tc.example == "all-external" {
				pg = testenv.StartPostgres(t)
				docs = onPostgres(t, pg, docs)
			}
			claim := installDocs(t, tc.example, ns, docs)
			converge(t, claim)
			if pg != nil {
				user, _, _ := unstructured.NestedString(claim.Object, "spec", "postgres", "user")
				want := map[string]string{"scheduler": user, "lookout": user}
				if got := databasesOn(t, pg, "scheduler", "lookout"); !cmp.Equal(want, got) {
					t.Errorf("databases on the external PostgreSQL (name: owner) = %v, want %v", got, want)
				}
			}
			_, refs := composed(t, claim)
			for _, r := range refs {
				if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
					t.Errorf("composed %s does not exist", r)
				}
			}
			for _, k := range tc.kinds {
				if len(byKind(refs, k)) == 0 {
					t.Errorf("no %s composed", k)
				}
			}
			if objs := byKind(refs, "Object"); len(objs) > 0 {
				if get(t, "postgresql.cnpg.io/v1", "Cluster", ns, claim.GetName()+"-postgres") == nil {
					t.Errorf("provider-kubernetes did not create the CloudNativePG Cluster of %s", objs[0])
				}
			}
			restrictedAdmission(t, ns, refs)
			c := get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
			for name, mode := range tc.modes {
				s, _, _ := unstructured.NestedMap(c.Object, "status", "backingServices", name)
				if s["mode"] != mode || s["ready"] != true {
					t.Errorf("claim status.backingServices.%s = %v, want mode %s and ready", name, s, mode)
				}
			}
			t.Logf("%s: %d composed objects, backing services ready", tc.example, len(refs))
		})
	}
}

// TestModeChangeAndProtection: on a live claim a backing service's mode
// cannot change unless allowed (the XRD's CEL transition rule, enforced by
// the API server). Both ways the in-cluster PostgreSQL leaves an Armada (an
// allowed switch to External, and deleting the claim) are run with both
// deletion policies: once the provider-kubernetes Object that wrapped the
// CloudNativePG Cluster is gone from the API server (provider-kubernetes
// has then done whatever its policy says to the Cluster), the Cluster is
// still there and not terminating under Orphan, and deleted under Delete.
// Under Delete, a switch in the apply that sets Orphan is refused first,
// naming both fields, with nothing deleted.
func TestModeChangeAndProtection(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, example, ns string
		// switchMode leaves through an allowed mode switch, otherwise
		// through claim deletion.
		switchMode bool
		kept       bool
	}{
		{"switch-orphan", "all-in-cluster", "e2e-switch-orphan", true, true},
		{"delete-orphan", "all-in-cluster", "e2e-delete-orphan", false, true},
		{"switch-delete", "mixed", "e2e-switch-delete", true, false},
		{"delete-delete", "mixed", "e2e-delete-delete", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := install(t, tc.example, tc.ns)
			cluster := claim.GetName() + "-postgres"
			waitFor(t, "CloudNativePG Cluster created by provider-kubernetes", func() (bool, string) {
				return get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) != nil, "not yet"
			})
			_, refs := composed(t, claim)
			objs := byKind(refs, "Object")
			if len(objs) != 1 {
				t.Fatalf("want the one Object wrapping the Cluster, got %v", objs)
			}
			obj := objs[0]

			// A mode switch without allowModeChange is refused by the API server.
			toExternal := map[string]any{
				"mode": "External", "host": "pg.example", "user": "armada",
				"passwordSecretRef": map[string]any{"name": "pg", "key": "password"},
			}
			err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(c.Object, toExternal, "spec", "postgres")
			})
			if err == nil || !strings.Contains(err.Error(), "spec.postgres.mode cannot change on a live Armada") {
				t.Fatalf("switching spec.postgres.mode without allowModeChange: got %v, want the CEL rule's refusal", err)
			}

			if tc.switchMode {
				toExternal["allowModeChange"] = true
				if !tc.kept {
					// Orphan and the switch in one apply: Crossplane would
					// delete the Object under its old policy, Delete, before
					// applying Orphan. The function refuses naming both
					// fields and nothing is deleted; restoring the policy
					// lets the switch proceed under it.
					if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
						_ = unstructured.SetNestedMap(c.Object, toExternal, "spec", "postgres")
						_ = unstructured.SetNestedField(c.Object, "Orphan", "spec", "deletionPolicy")
					}); err != nil {
						t.Fatalf("switching with allowModeChange and deletionPolicy Orphan in one apply: %v", err)
					}
					claimAccepted(t, claim, "False", "spec.deletionPolicy, spec.postgres.mode: Forbidden")
					if o := get(t, obj.APIVersion, obj.Kind, obj.Namespace, obj.Name); o == nil || o.GetDeletionTimestamp() != nil {
						t.Fatal("the Object wrapping the Cluster is gone or going after a refused mixed edit")
					}
				}
				if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
					_ = unstructured.SetNestedMap(c.Object, toExternal, "spec", "postgres")
					_ = unstructured.SetNestedField(c.Object, map[bool]string{true: "Orphan", false: "Delete"}[tc.kept], "spec", "deletionPolicy")
				}); err != nil {
					t.Fatalf("switching with allowModeChange: %v", err)
				}
			} else if err := kube().Delete(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the Object that wrapped the Cluster gone from the API server", func() (bool, string) {
				return get(t, obj.APIVersion, obj.Kind, obj.Namespace, obj.Name) == nil, "still there"
			})
			c := get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster)
			switch {
			case tc.kept && c == nil:
				t.Fatal("the CloudNativePG Cluster was deleted despite deletionPolicy Orphan")
			case tc.kept && c.GetDeletionTimestamp() != nil:
				t.Fatal("the CloudNativePG Cluster is being deleted despite deletionPolicy Orphan")
			case !tc.kept:
				waitFor(t, "CloudNativePG Cluster deleted (deletionPolicy Delete)", func() (bool, string) {
					return get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) == nil, "still there"
				})
			}
			_ = kube().Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
				"metadata": map[string]any{"name": cluster, "namespace": tc.ns},
			}}, client.PropagationPolicy("Background"))
		})
	}
}

// updateClaim reads the claim, changes it and updates it, retrying while
// Crossplane's own updates conflict.
func updateClaim(t *testing.T, claim *unstructured.Unstructured, change func(*unstructured.Unstructured)) error {
	t.Helper()
	for {
		c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
		change(c)
		err := kube().Update(context.Background(), c)
		if !kerrors.IsConflict(err) {
			return err
		}
	}
}
