package armada

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestDatabaseNamesWithUnderscores: a database name may hold "_" (the
// XRD's pattern), an object name may not; both modes that compose a
// Database object per database still compose valid object names, and the
// database itself keeps its name.
func TestDatabaseNamesWithUnderscores(t *testing.T) {
	cases := map[string]struct {
		example string
		// dbName reads the database's own name from its object.
		dbName func(u *unstructured.Unstructured) string
	}{
		"ProviderSQL": {example: testutil.Example("all-external.yaml"), dbName: func(u *unstructured.Unstructured) string {
			return u.GetAnnotations()[annotationExternalName]
		}},
		"CloudNativePG": {example: testutil.Example("all-in-cluster.yaml"), dbName: func(u *unstructured.Unstructured) string {
			n, _, _ := unstructured.NestedString(u.Object, "spec", "name")
			return n
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := exampleSpecs(t, tc.example)[0]
			s.Postgres.Databases.Scheduler, s.Postgres.Databases.Lookout = "_armada_scheduler", "lookout_"
			got := map[string]bool{}
			for _, o := range render(t, s, Observed{}).Objects {
				u, ok := o.Object.(*unstructured.Unstructured)
				if !ok || u.GetKind() != "Database" {
					continue
				}
				if errs := validation.IsDNS1123Subdomain(u.GetName()); len(errs) > 0 {
					t.Errorf("Database %s: invalid object name: %v", u.GetName(), errs)
				}
				got[tc.dbName(u)] = true
			}
			if !got["_armada_scheduler"] || !got["lookout_"] || len(got) != 2 {
				t.Errorf("Database objects name the databases %v, want _armada_scheduler and lookout_", got)
			}
		})
	}
}

// TestDatabaseObjectNamesCollide: two database names that would name the
// same object are refused, naming the field.
func TestDatabaseObjectNamesCollide(t *testing.T) {
	s := exampleSpecs(t, testutil.Example("all-external.yaml"))[0]
	s.Postgres.Databases.Scheduler, s.Postgres.Databases.Lookout = "armada_", "armada_x"
	_, errs := New(claimed(s))
	if errs == nil || !strings.Contains(errs.ToAggregate().Error(), "spec.postgres.databases.lookout") {
		t.Fatalf("New(...) = %v, want an error naming spec.postgres.databases.lookout", errs)
	}
}
