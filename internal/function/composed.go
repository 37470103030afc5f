package function

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// checkComposed refuses an XR whose observed composed resources include
// one it did not compose. Crossplane observes whatever the XR's resource
// references name that no other XR controls, and a namespaced XR's
// spec.crossplane.resourceRefs is its author's to write: listing a
// PriorityClass or namespace the platform made there would have the
// function take it for its own, compose it (Crossplane adopts it) and
// delete it with the XR. "Already composed" comes only from what carries
// the XR's controller reference, which Crossplane sets on everything it
// applies, or its ownership mark. A refusal is a fatal result: Crossplane
// then neither applies nor deletes anything.
func checkComposed(observed map[resource.Name]resource.ObservedComposed, oxr *resource.Composite, owner armada.Owner) error {
	uid := oxr.Resource.GetUID()
	var foreign []string
	for _, name := range slices.Sorted(maps.Keys(observed)) {
		u := &observed[name].Resource.Unstructured
		if composedBy(u, uid, owner) {
			continue
		}
		what := u.GetKind() + " " + u.GetName()
		if ns := u.GetNamespace(); ns != "" {
			what = u.GetKind() + " " + ns + "/" + u.GetName()
		}
		foreign = append(foreign, what)
	}
	if len(foreign) == 0 {
		return nil
	}
	refs := "spec.resourceRefs"
	if oxr.Resource.GetNamespace() != "" {
		refs = "spec.crossplane.resourceRefs"
	}
	return errors.Errorf("%s: Invalid value: names %s, which this %s did not compose: Crossplane would pass it to the "+
		"function as composed, to be changed and deleted with it; remove it from %s (nothing is applied or deleted until then)",
		refs, strings.Join(foreign, ", "), oxr.Resource.GetKind(), refs)
}

// ownObserved returns the XR's observed composed resources, or false after
// a fatal result when they cannot be read or include one the XR did not
// compose (checkComposed).
func ownObserved(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, oxr *resource.Composite,
	owner armada.Owner,
) (map[resource.Name]resource.ObservedComposed, bool) {
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composed resources"))
		return nil, false
	}
	if refuse(rsp, oxr.Resource.GetKind(), checkComposed(observed, oxr, owner)) {
		return nil, false
	}
	return observed, true
}

// composedBy says whether the XR with uid composed u: u carries the XR's
// controller reference, or its owner's mark (or, from before marks,
// Crossplane's label naming a cluster-scoped XR).
func composedBy(u metav1.Object, uid types.UID, owner armada.Owner) bool {
	if c := metav1.GetControllerOf(u); c != nil && c.UID == uid {
		return true
	}
	owned, _ := owner.Owns(u)
	return owned
}
