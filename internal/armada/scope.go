package armada

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Scope rules of a namespaced (Crossplane v2) Armada. Crossplane refuses to
// apply a cluster-scoped object composed for a namespaced XR, and forces
// every composed object into the XR's namespace. So a namespaced Armada
// composes into its own namespace, and what Armada needs cluster-wide (its
// PriorityClasses and the ClusterRoleBindings of the executor and
// binoculars to their fixed ClusterRoles, see rbac.go) goes through the
// same renderer.addWith that wraps a remote executor's objects: here in
// provider-kubernetes Objects, in the Armada's namespace, for the config
// spec.clusterScope names. Everything else renders exactly as for a claim.

// clusterScopeComponent labels the Objects that carry cluster-scoped
// objects.
const clusterScopeComponent = "cluster-scope"

// ClusterScopeRef is the provider-kubernetes config that composes a
// namespaced XR's cluster-scoped objects, its kind defaulted.
func ClusterScopeRef(ref *v1alpha1.ProviderConfigRef) *v1alpha1.ProviderConfigRef {
	if ref == nil {
		return nil
	}
	out := *ref
	if out.Kind == "" {
		out.Kind = kindClusterPCRef
	}
	return &out
}

// namespaced sets up a namespaced XR's install: its own namespace, and the
// cluster-scope config when there is one.
func (in *Install) namespaced(xr XR) field.ErrorList {
	var errs field.ErrorList
	if xr.Spec.Namespace != "" {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "namespace"),
			"a namespaced Armada runs in its own namespace ("+xr.Namespace+"); remove spec.namespace"))
	}
	in.Namespace = xr.Namespace
	if ref := ClusterScopeRef(xr.ClusterScope); ref != nil {
		in.clusterScope = &clusterRef{Kind: ref.Kind, Name: ref.Name, local: true}
	}
	return errs
}

// checkClusterScope refuses a namespaced install that would compose
// cluster-scoped objects with no config to compose them through.
func (in *Install) checkClusterScope() field.ErrorList {
	if in.clusterScope != nil || len(in.clusterScoped()) == 0 {
		return nil
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "clusterScope", "providerConfigRef"), fmt.Sprintf(
		"a namespaced Armada composes its cluster-scoped objects (%s) as provider-kubernetes Objects in namespace %s; "+
			"name the kubernetes.m.crossplane.io ClusterProviderConfig (or a ProviderConfig in this namespace) that reaches this cluster",
		in.clusterScopedSummary(), in.Namespace))}
}

// clusterScoped lists the kinds of the cluster-scoped objects this cluster
// gets, as r.priorityClasses and r.instance compose them.
func (in *Install) clusterScoped() []string {
	var kinds []string
	if len(in.Spec.Scheduling.PriorityClasses) > 0 {
		kinds = append(kinds, "PriorityClasses")
	}
	for i := range components {
		if c := &components[i]; len(c.ClusterRules) > 0 && (!c.PerExecutor || in.hasLocalExecutor()) {
			kinds = append(kinds, "ClusterRoleBindings")
			break
		}
	}
	if in.hasLocalExecutor() {
		kinds = append(kinds, "job Namespaces", "ValidatingAdmissionPolicies")
	}
	return kinds
}

func (in *Install) clusterScopedSummary() string {
	return strings.Join(in.clusterScoped(), ", ")
}

// Namespaced says whether the install is a namespaced XR's.
func (in *Install) Namespaced() bool { return in.isNamespaced }
