package teamqueue

import (
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// ScopeRef is the provider-kubernetes config a namespaced queue composes
// through on target (see scopeRef), and whether it is inherited from the
// target rather than the queue's own spec.clusterScope. The tenancy
// policy checks it.
func (xr XR) ScopeRef(target *armada.Install) (ref *v1alpha1.ProviderConfigRef, inherited bool) {
	if xr.Namespace == "" {
		return nil, false
	}
	ref = xr.scopeRef(target)
	return ref, ref != nil && xr.ClusterScope == nil
}
