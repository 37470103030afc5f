package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestSQLProviderConfigOutlivesDatabases: after an allowed switch away
// from provider-sql's databases, their ProviderConfig stays, exactly as
// observed, while any Database is still observed or still exists
// unobserved (provider-sql drops or releases them through it), and goes
// once none is.
func TestSQLProviderConfigOutlivesDatabases(t *testing.T) {
	external := exampleSpecs(t, testutil.Example("all-external.yaml"))[0]
	before := render(t, external, Observed{})
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range before.Objects {
		if o.Key == keyPostgresSQLPC || o.Key == keyPostgresSQLDB+"scheduler" {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			seen[o.Key] = &unstructured.Unstructured{Object: m}
		}
	}
	if len(seen) != 2 {
		t.Fatalf("all-external composes no provider-sql ProviderConfig and scheduler Database: %v", seen)
	}
	wantSpec, _, _ := unstructured.NestedMap(seen[keyPostgresSQLPC].Object, "spec")

	switched := external
	switched.Postgres = v1alpha1.Postgres{Mode: modeInCluster, AllowModeChange: true}
	withDB := Observe(seen)
	delete(seen, keyPostgresSQLDB+"scheduler")
	withoutDB := Observe(seen)

	cases := map[string]struct {
		observed Observed
		want     map[string]any
	}{
		"DatabaseStillObserved": {observed: withDB, want: wantSpec},
		"DatabaseLeaving":       {observed: withoutDB.WithSQLDatabasesLeft(true), want: wantSpec},
		"DatabasesGone":         {observed: withoutDB},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got map[string]any
			for _, o := range render(t, switched, tc.observed).Objects {
				if o.Key == keyPostgresSQLPC {
					u, ok := o.Object.(*unstructured.Unstructured)
					if !ok {
						t.Fatalf("the ProviderConfig is a %T", o.Object)
					}
					got, _, _ = unstructured.NestedMap(u.Object, "spec")
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the composed ProviderConfig's spec after the switch: -want, +got:\n%s", diff)
			}
		})
	}
}
