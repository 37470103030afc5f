package function

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// requiredByName maps each required resource that exists, of the
// requirements whose names start with prefix, by its name: what the
// function asked Crossplane for to see whether a name it would compose is
// taken. A requirement Crossplane has not fetched yet has no entry.
func requiredByName(req *fnv1.RunFunctionRequest, prefix string) map[string]metav1.Object {
	out := map[string]metav1.Object{}
	// Only the requirements under prefix are converted from their
	// Structs: request.GetRequiredResources would convert every one.
	for key := range req.GetRequiredResources() {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		items, _, err := request.GetRequiredResource(req, key)
		if err != nil {
			return nil
		}
		for _, r := range items {
			out[r.Resource.GetName()] = r.Resource
		}
	}
	return out
}

// observedKeys are the names after prefix of the observed composed
// resources whose composition resource names start with prefix: what the
// XR itself composed, by name, wrapped or not.
func observedKeys(observed map[resource.Name]resource.ObservedComposed, prefix string) []string {
	var names []string
	for key := range observed {
		if name, ok := strings.CutPrefix(string(key), prefix); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// sqlDatabaseRequirement names the requirement of the provider-sql
// Databases a mode switch took out of desired state.
const sqlDatabaseRequirement = "sql-databases-leaving"

// requireLeavingSQLDatabases asks Crossplane for the provider-sql Databases
// the install may still have after a switch to InCluster (see
// Install.LeavingSQLDatabases), and returns o with whether any of them
// still needs the install's ProviderConfig. Until Crossplane has fetched
// them, or if they cannot be read, they count as left: the ProviderConfig
// goes only once none is seen.
func requireLeavingSQLDatabases(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, in *armada.Install, o armada.Observed) armada.Observed {
	sel, ok := in.LeavingSQLDatabases(o)
	if !ok {
		return o
	}
	require(rsp, sqlDatabaseRequirement, &fnv1.ResourceSelector{
		ApiVersion: sel.APIVersion,
		Kind:       sel.Kind,
		Namespace:  &sel.Namespace,
		Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: sel.Labels}},
	})
	items, fetched, err := request.GetRequiredResource(req, sqlDatabaseRequirement)
	left := !fetched || err != nil
	for _, r := range items {
		left = left || in.UsesSQLProviderConfig(r.Resource)
	}
	return o.WithSQLDatabasesLeft(left)
}
