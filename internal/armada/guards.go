package armada

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// deletesData reports whether deleting an observed stateful object, as it
// is, deletes its data: a StatefulSet that deletes its volumes, a
// CloudNativePG Database that drops its database, a managed resource (or
// provider-kubernetes Object) whose management policies include Delete.
func deletesData(u *unstructured.Unstructured) bool {
	switch {
	case u.GetKind() == kindStatefulSet:
		p, _, _ := unstructured.NestedString(u.Object, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
		return p == "Delete"
	case u.GetAPIVersion() == apiCNPG && u.GetKind() == kindDatabase:
		p, _, _ := unstructured.NestedString(u.Object, "spec", "databaseReclaimPolicy")
		return p == "delete"
	}
	policies, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "managementPolicies")
	return !found || slices.Contains(policies, "Delete") || slices.Contains(policies, "*")
}

// isRenamedDatabase reports whether an observed database key that left
// desired state left it because spec.postgres.databases renamed it: it is
// a database of the mode Postgres still runs in.
func isRenamedDatabase(s *v1alpha1.ArmadaSpec, key string) bool {
	pg := &s.Postgres
	switch {
	case strings.HasPrefix(key, keyPostgresCNPGDB):
		return pg.Mode == modeInCluster
	case strings.HasPrefix(key, keyPostgresSQLDB):
		return pg.Mode == modeExternal && pg.AdminSecretRef != nil
	}
	return false
}

// checkDrops refuses a render that would drop stateful resources in a way
// the user did not ask for. Crossplane deletes what leaves desired state
// with the policy the object carries, before it applies anything new, so:
//
//   - a mode switch or database rename in the same apply that changes
//     spec.deletionPolicy is refused naming both fields: the old objects
//     would go under the old policy. The policy is known from the observed
//     objects or, for those not observed, from the policy the XR's status
//     reports the service was composed with.
//   - renaming a database under deletionPolicy Delete drops the old one
//     and its data: refused unless spec.postgres.allowDatabaseRename.
//
// Returning an error leaves everything composed as it is.
func checkDrops(s *v1alpha1.ArmadaSpec, o Observed, objs []Object) error {
	for _, b := range backingServices {
		p, m := o.Policies[b.Name], o.Modes[b.Name]
		if p != "" && p != s.DeletionPolicy && m != "" && m != b.Field(s) {
			return mixedEdit(s, "spec."+b.Name+".mode", b.Name+"'s "+m+" resources", p)
		}
	}
	desired := make(map[string]bool, len(objs))
	for _, obj := range objs {
		desired[obj.Key] = true
	}
	deletes := s.DeletionPolicy == deletionDelete
	for _, key := range slices.Sorted(maps.Keys(o.DeletesData)) {
		if desired[key] {
			continue
		}
		service, _, _ := strings.Cut(key, "-")
		renamed := isRenamedDatabase(s, key)
		what := "spec." + service + ".mode"
		if renamed {
			what = "spec.postgres.databases"
		}
		if o.DeletesData[key] != deletes {
			observed := deletionOrphan
			if o.DeletesData[key] {
				observed = deletionDelete
			}
			return mixedEdit(s, what, key, observed)
		}
		if renamed && deletes && !s.Postgres.AllowDatabaseRename {
			return errors.Errorf("spec.postgres.databases: Forbidden: the rename leaves database resource %s out, and under spec.deletionPolicy Delete "+
				"that drops the old database and its data; set spec.postgres.allowDatabaseRename: true to drop it, "+
				"or set spec.deletionPolicy: Orphan (apply it alone first) to keep it", key)
		}
	}
	return nil
}

// mixedEdit is the refusal of an apply that changes spec.deletionPolicy and
// drops stateful resources composed under the old policy.
func mixedEdit(s *v1alpha1.ArmadaSpec, what, dropped, old string) error {
	return errors.Errorf("spec.deletionPolicy, %s: Forbidden: one apply changes spec.deletionPolicy to %s and drops %s, which carries deletionPolicy %s "+
		"and would be deleted under it (Crossplane deletes before it applies the new policy); apply spec.deletionPolicy alone first, "+
		"wait until status.backingServices reports it, then change %s", what, s.DeletionPolicy, dropped, old, what)
}
