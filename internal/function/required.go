package function

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
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
