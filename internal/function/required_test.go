package function

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestRunFunctionKeepsSQLProviderConfigForLeavingDatabases: after an
// allowed switch of spec.postgres.mode from External to InCluster,
// Crossplane deletes provider-sql's Databases and stops observing them at
// once. The function asks for the Databases still in the namespace and
// keeps the ProviderConfig they need to drop or release their databases
// while one naming it is there, or while Crossplane has not fetched them
// yet; it lets the ProviderConfig go once none is.
func TestRunFunctionKeepsSQLProviderConfigForLeavingDatabases(t *testing.T) {
	const pcKey = "postgres-sql-providerconfig"
	external := exampleRequest(t, testutil.Example("all-external.yaml"))
	rsp, err := runFunction(t, newFunction(t), external)
	if err != nil {
		t.Fatal(err)
	}
	desired := rsp.GetDesired().GetResources()
	pc, db := desired[pcKey], desired["postgres-sql-db-scheduler"]
	if pc == nil || db == nil {
		t.Fatalf("all-external composes no provider-sql ProviderConfig or scheduler Database: %v", slices.Collect(maps.Keys(desired)))
	}
	ns := db.GetResource().AsMap()["metadata"].(map[string]any)["namespace"].(string)
	labels := map[string]string{}
	for k, v := range db.GetResource().AsMap()["metadata"].(map[string]any)["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	// A Database naming another ProviderConfig does not need this one.
	other := db.GetResource().AsMap()
	other["spec"].(map[string]any)["providerConfigRef"].(map[string]any)["name"] = "another-admin"
	otherDB, err := structpb.NewStruct(other)
	if err != nil {
		t.Fatal(err)
	}

	// The switch: spec.postgres InCluster, the ProviderConfig observed,
	// the Databases no longer (Crossplane has deleted them).
	switched := exampleRequest(t, testutil.Example("all-external.yaml"))
	spec := switched.GetObserved().GetComposite().GetResource().GetFields()["spec"].GetStructValue()
	pg := spec.GetFields()["postgres"].GetStructValue().AsMap()
	postgres, err := structpb.NewValue(map[string]any{"mode": "InCluster", "allowModeChange": true, "databases": pg["databases"]})
	if err != nil {
		t.Fatal(err)
	}
	spec.Fields["postgres"] = postgres
	// Composed by this XR, as Crossplane's label on it says.
	observedPC := pc.GetResource().AsMap()
	xrName := switched.GetObserved().GetComposite().GetResource().AsMap()["metadata"].(map[string]any)["name"]
	observedPC["metadata"].(map[string]any)["labels"].(map[string]any)["crossplane.io/composite"] = xrName
	observedPCStruct, err := structpb.NewStruct(observedPC)
	if err != nil {
		t.Fatal(err)
	}
	switched.Observed.Resources = map[string]*fnv1.Resource{pcKey: {Resource: observedPCStruct}}

	// The selector matches the composed Databases, by the labels that name
	// the install and its PostgreSQL.
	selected := map[string]string{}
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"} {
		selected[k] = labels[k]
	}
	wantSel := &fnv1.ResourceSelector{
		ApiVersion: "postgresql.sql.m.crossplane.io/v1alpha1", Kind: "Database", Namespace: &ns,
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: selected}},
	}
	cases := map[string]struct {
		required *fnv1.Resources
		keep     bool
	}{
		"NotFetchedYet":       {keep: true},
		"DatabaseLeaving":     {required: &fnv1.Resources{Items: []*fnv1.Resource{{Resource: db.GetResource()}}}, keep: true},
		"OtherProviderConfig": {required: &fnv1.Resources{Items: []*fnv1.Resource{{Resource: otherDB}}}},
		"NoneLeft":            {required: &fnv1.Resources{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{Meta: switched.GetMeta(), Observed: switched.GetObserved(), RequiredResources: maps.Clone(switched.GetRequiredResources())}
			if tc.required != nil {
				req.RequiredResources[sqlDatabaseRequirement] = tc.required
			}
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if msg := refusalOf(rsp); msg != "" {
				t.Fatalf("refused: %s", msg)
			}
			if diff := cmp.Diff(wantSel, rsp.GetRequirements().GetResources()[sqlDatabaseRequirement], protocmp.Transform()); diff != "" {
				t.Errorf("the leaving Databases' requirement: -want, +got:\n%s", diff)
			}
			got := rsp.GetDesired().GetResources()[pcKey]
			if kept := got != nil; kept != tc.keep {
				t.Fatalf("the ProviderConfig is desired: %t, want %t", kept, tc.keep)
			}
			if got == nil {
				return
			}
			if diff := cmp.Diff(pc.GetResource().AsMap()["spec"], got.GetResource().AsMap()["spec"]); diff != "" {
				t.Errorf("the kept ProviderConfig's spec: -observed, +desired:\n%s", diff)
			}
		})
	}
}

// TestRunFunctionKeepsSQLProviderConfigName: a new Armada's provider-sql
// ProviderConfig carries a hash of its namespace and name (provider-sql
// counts a namespaced ProviderConfig's users by name across namespaces);
// one that already composes the unhashed name, as observed or as its
// resource references record, keeps it, and its Databases go on naming it.
func TestRunFunctionKeepsSQLProviderConfigName(t *testing.T) {
	const (
		pcKey  = "postgres-sql-providerconfig"
		legacy = "armada-postgres-admin"
	)
	base := exampleRequest(t, testutil.Example("all-external.yaml"))
	rsp, err := runFunction(t, newFunction(t), base)
	if err != nil {
		t.Fatal(err)
	}
	pc := rsp.GetDesired().GetResources()[pcKey]
	if pc == nil {
		t.Fatal("all-external composes no provider-sql ProviderConfig")
	}
	xrName := base.GetObserved().GetComposite().GetResource().AsMap()["metadata"].(map[string]any)["name"]
	observedLegacy := pc.GetResource().AsMap()
	meta := observedLegacy["metadata"].(map[string]any)
	meta["name"] = legacy
	meta["labels"].(map[string]any)["crossplane.io/composite"] = xrName
	observedPC, err := structpb.NewStruct(observedLegacy)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(apiVersion string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": "ProviderConfig", "name": legacy}
	}

	cases := map[string]struct {
		observed map[string]*fnv1.Resource
		refs     []any
		legacy   bool
	}{
		"NewArmada":                {},
		"ObservedUnhashed":         {observed: map[string]*fnv1.Resource{pcKey: {Resource: observedPC}}, legacy: true},
		"ReferencedUnhashed":       {refs: []any{ref("postgresql.sql.m.crossplane.io/v1alpha1")}, legacy: true},
		"ReferencedOtherProviders": {refs: []any{ref("kubernetes.m.crossplane.io/v1alpha1")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := base.GetObserved().GetComposite().GetResource().AsMap()
			if tc.refs != nil {
				xr["spec"].(map[string]any)["resourceRefs"] = tc.refs
			}
			s, err := structpb.NewStruct(xr)
			if err != nil {
				t.Fatal(err)
			}
			req := &fnv1.RunFunctionRequest{
				Meta:              base.GetMeta(),
				Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: s}, Resources: tc.observed},
				RequiredResources: base.GetRequiredResources(),
			}
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if msg := refusalOf(rsp); msg != "" {
				t.Fatalf("refused: %s", msg)
			}
			desired := rsp.GetDesired().GetResources()
			got, _ := desired[pcKey].GetResource().AsMap()["metadata"].(map[string]any)["name"].(string)
			if isLegacy := got == legacy; isLegacy != tc.legacy || !strings.HasPrefix(got, legacy) {
				t.Fatalf("the ProviderConfig is named %q; want the unhashed name: %t", got, tc.legacy)
			}
			for _, db := range []string{"postgres-sql-db-scheduler", "postgres-sql-db-lookout"} {
				ref, _ := desired[db].GetResource().AsMap()["spec"].(map[string]any)["providerConfigRef"].(map[string]any)
				if diff := cmp.Diff(got, ref["name"]); diff != "" {
					t.Errorf("Database %s's ProviderConfig: -want, +got:\n%s", db, diff)
				}
			}
		})
	}
}
