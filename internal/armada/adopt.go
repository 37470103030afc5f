package armada

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Namespaces and PriorityClasses composed in another cluster, through a
// provider-kubernetes Object, cannot be looked up before they are composed:
// the function reads only this cluster. provider-kubernetes would take over
// one that exists there already (apply its manifest, and delete it with the
// Object). So such an Object never updates or deletes until it is known to
// have created its object itself: crossplane-runtime records on the Object
// when its Create succeeded, and Create runs only when the object did not
// exist. An Object that found its object already there only observes it,
// for good.

// notAdoptedKinds are the kinds of manifest NotAdopted guards, each with
// how messages name it.
var notAdoptedKinds = map[string]string{"Namespace": strings.ToLower("Namespace"), "PriorityClass": "PriorityClass"}

// annotationCreateSucceeded is where crossplane-runtime records that a
// managed resource created its external resource.
const annotationCreateSucceeded = "crossplane.io/external-create-succeeded"

// Management policies while an Object's creation is not known, and for an
// Object whose object existed before it.
var (
	createOnly  = []any{"Observe", "Create"}
	observeOnly = []any{"Observe"}
)

// NotAdopted makes every provider-kubernetes Object among objs that carries
// a Namespace or a PriorityClass leave one it did not create untouched:
// until the observed Object (observed, by composition resource name) shows
// it created its object, it may only observe and create; once it has, it
// keeps the management policies it was composed with; if it found the
// object already there (and still sees it), it only observes. It returns a
// message for each object found already there.
func NotAdopted(objs []Object, observed map[string]*unstructured.Unstructured) []string {
	var foreign []string
	for _, o := range objs {
		u, ok := o.Object.(*unstructured.Unstructured)
		if !ok || u.GetAPIVersion() != apiK8sObject || u.GetKind() != "Object" {
			continue
		}
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "manifest", "kind")
		what, guarded := notAdoptedKinds[kind]
		if !guarded {
			continue
		}
		seen := observed[o.Key]
		switch {
		case seen != nil && seen.GetAnnotations()[annotationCreateSucceeded] != "":
			// Its own namespace: as composed.
		case seen != nil && hasAtProvider(seen) && !unsynced(seen):
			_ = unstructured.SetNestedSlice(u.Object, slices.Clone(observeOnly), "spec", "managementPolicies")
			name, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "manifest", "metadata", "name")
			pc, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
			foreign = append(foreign, fmt.Sprintf("%s %s already exists in the cluster of provider config %s and was not created here: "+
				"it is observed only, never changed or deleted", what, name, pc))
		default:
			_ = unstructured.SetNestedSlice(u.Object, slices.Clone(createOnly), "spec", "managementPolicies")
		}
	}
	slices.Sort(foreign)
	return foreign
}

// unsynced says whether the Object's last reconcile failed, such as an
// Observe-only Object whose namespace has since gone: what it saw before
// no longer holds, so it may create the namespace again.
func unsynced(u *unstructured.Unstructured) bool {
	status, _ := condition(u, "Synced")
	return status == "False"
}

// hasAtProvider says whether provider-kubernetes has seen the Object's
// object in its cluster.
func hasAtProvider(u *unstructured.Unstructured) bool {
	m, found, _ := unstructured.NestedMap(u.Object, "status", "atProvider", "manifest")
	return found && len(m) > 0
}
