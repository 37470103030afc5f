package armada

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

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

// TestSQLProviderConfigNames: Armadas of one name in two namespaces
// compose provider-sql ProviderConfigs of different names, which their
// Databases name: provider-sql v0.16.0 counts a namespaced
// ProviderConfig's users by name across namespaces, so a shared name would
// hold one Armada's ProviderConfig on the other's Databases. An Armada
// that already composes the unhashed name keeps it.
func TestSQLProviderConfigNames(t *testing.T) {
	external := exampleSpecs(t, testutil.Example("all-external.yaml"))[0]
	xr := func(namespace string, composed ...string) XR {
		return XR{
			Name:                       "armada-x7k2p",
			Labels:                     map[string]string{xcrd.LabelKeyClaimName: "armada", xcrd.LabelKeyClaimNamespace: namespace},
			Spec:                       external,
			ComposedSQLProviderConfigs: composed,
		}
	}
	teamB := sqlProviderConfigOf(t, xr("team-b"))
	cases := map[string]struct {
		reason string
		xr     XR
		want   func(name string) string
	}{
		"NewArmada": {
			reason: "A new Armada's ProviderConfig carries a hash: another namespace's Armada of the same name composes another name.",
			xr:     xr("team-a"),
			want: func(name string) string {
				if name == teamB || !strings.HasPrefix(name, "armada-postgres-admin-") || len(name) > 63 {
					return fmt.Sprintf("want a hashed name of at most 63 characters, not team-b's %q", teamB)
				}
				return ""
			},
		},
		"ExistingArmada": {
			reason: "An Armada that composes the unhashed name keeps it: its Databases name it.",
			xr:     xr("team-a", "armada-postgres-admin"),
			want: func(name string) string {
				return cmp.Diff("armada-postgres-admin", name)
			},
		},
		"OtherNameComposed": {
			reason: "Only the unhashed name is kept; any other composed name is not.",
			xr:     xr("team-b", "armada-postgres-admin-other"),
			want: func(name string) string {
				return cmp.Diff(teamB, name)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if msg := tc.want(sqlProviderConfigOf(t, tc.xr)); msg != "" {
				t.Errorf("%s\nthe ProviderConfig's name: %s", tc.reason, msg)
			}
		})
	}
}

// sqlProviderConfigOf renders xr and returns its provider-sql
// ProviderConfig's name, failing unless each Database names it.
func sqlProviderConfigOf(t *testing.T, xr XR) string {
	t.Helper()
	in, errs := New(xr)
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	out, err := Render(in, Options{Rand: KeyedRand([]byte("test"), "xr")})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	pc := find(out, keyPostgresSQLPC)
	if pc == nil {
		t.Fatal("no provider-sql ProviderConfig composed")
	}
	u, ok := pc.Object.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("the ProviderConfig is a %T", pc.Object)
	}
	dbs := 0
	for _, o := range out.Objects {
		if !strings.HasPrefix(o.Key, keyPostgresSQLDB) {
			continue
		}
		db, ok := o.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("Database %s is a %T", o.Key, o.Object)
		}
		dbs++
		if got, _, _ := unstructured.NestedString(db.Object, "spec", "providerConfigRef", "name"); got != u.GetName() {
			t.Errorf("Database %s names ProviderConfig %q, want %q", db.GetName(), got, u.GetName())
		}
	}
	if dbs == 0 {
		t.Error("no provider-sql Database composed")
	}
	return u.GetName()
}
