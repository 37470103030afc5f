package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBackingServices applies the examples with in-cluster, external and
// mixed backing services: the API server accepts every composed provider
// and CloudNativePG object against the pinned CRDs, provider-kubernetes
// creates the CloudNativePG Cluster the function wraps in an Object, the
// claim becomes Ready once the services report ready, and the claim's
// status reports each service.
func TestBackingServices(t *testing.T) {
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
			claim := install(t, tc.example, ns)
			converge(t, claim)
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
// the API server); an allowed switch drops the old mode's resources but,
// with deletionPolicy Orphan, the data (the CloudNativePG Cluster) stays;
// deleting a claim with deletionPolicy Orphan leaves the Cluster, and with
// Delete provider-kubernetes deletes it.
func TestModeChangeAndProtection(t *testing.T) {
	for _, tc := range []struct {
		example, ns string
		kept        bool
	}{
		{"all-in-cluster", "e2e-orphan", true},
		{"mixed", "e2e-delete-data", false},
	} {
		t.Run(tc.example, func(t *testing.T) {
			claim := install(t, tc.example, tc.ns)
			cluster := claim.GetName() + "-postgres"
			waitFor(t, "CloudNativePG Cluster created by provider-kubernetes", func() (bool, string) {
				return get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) != nil, "not yet"
			})

			// A mode switch without allowModeChange is refused by the API server.
			err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(c.Object, map[string]any{
					"mode": "External", "host": "pg.example", "user": "armada",
					"passwordSecretRef": map[string]any{"name": "pg", "key": "password"},
				}, "spec", "postgres")
			})
			if err == nil || !strings.Contains(err.Error(), "spec.postgres.mode cannot change on a live Armada") {
				t.Fatalf("switching spec.postgres.mode without allowModeChange: got %v, want the CEL rule's refusal", err)
			}
			t.Logf("refused: %v", err)

			if !tc.kept {
				if err := kube().Delete(context.Background(), claim); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "CloudNativePG Cluster deleted with the claim (deletionPolicy Delete)", func() (bool, string) {
					return get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) == nil, "still there"
				})
				return
			}

			// Allowed, the switch composes the external mode and drops the
			// Object; the Cluster and its data stay.
			if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(c.Object, map[string]any{
					"mode": "External", "host": "pg.example", "user": "armada", "allowModeChange": true,
					"passwordSecretRef": map[string]any{"name": "pg", "key": "password"},
				}, "spec", "postgres")
			}); err != nil {
				t.Fatalf("switching with allowModeChange: %v", err)
			}
			waitFor(t, "the in-cluster Postgres Object dropped from the composition", func() (bool, string) {
				_, refs := composed(t, claim)
				return len(byKind(refs, "Object")) == 0, fmt.Sprintf("%d Objects", len(byKind(refs, "Object")))
			})
			if get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) == nil {
				t.Fatal("the CloudNativePG Cluster was deleted by an allowed mode switch with deletionPolicy Orphan")
			}

			// Deleting the claim leaves the Cluster too.
			if err := kube().Delete(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "claim deleted", func() (bool, string) {
				return get(t, claimAPIVersion, "ArmadaClaim", tc.ns, claim.GetName()) == nil, "still there"
			})
			if get(t, "postgresql.cnpg.io/v1", "Cluster", tc.ns, cluster) == nil {
				t.Error("the CloudNativePG Cluster was deleted with the claim despite deletionPolicy Orphan")
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
