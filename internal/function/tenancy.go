package function

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/teamqueue"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// The requirement names of the tenancy policies: the one named after the
// tenant's namespace and the default one.
const (
	tenancyRequirementNamespace = "tenancy-policy-namespace"
	tenancyRequirementDefault   = "tenancy-policy-default"
)

// requireTenancyPolicies asks Crossplane for the ArmadaTenancyPolicies
// that may govern namespace ns, beside whatever else rsp requires.
func requireTenancyPolicies(rsp *fnv1.RunFunctionResponse, ns string) {
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = map[string]*fnv1.ResourceSelector{}
	}
	apiVersion := tenancyv1.Group + "/" + tenancyv1.Version
	rsp.Requirements.Resources[tenancyRequirementNamespace] = &fnv1.ResourceSelector{
		ApiVersion: apiVersion, Kind: tenancyv1.Kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: ns},
	}
	rsp.Requirements.Resources[tenancyRequirementDefault] = &fnv1.ResourceSelector{
		ApiVersion: apiVersion, Kind: tenancyv1.Kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: tenancyv1.DefaultPolicyName},
	}
}

// tenancyPolicy is the policy governing namespace ns among the required
// resources. Before Crossplane has fetched them it is the built-in
// default, the strictest, so a first call never composes more than the
// policy will allow; Crossplane calls again with them before it applies
// anything.
func tenancyPolicy(req *fnv1.RunFunctionRequest, ns string) (tenancy.Policy, error) {
	required, err := request.GetRequiredResources(req)
	if err != nil {
		return tenancy.Policy{}, err
	}
	var found []*unstructured.Unstructured
	for _, key := range []string{tenancyRequirementNamespace, tenancyRequirementDefault} {
		for _, r := range required[key] {
			found = append(found, r.Resource)
		}
	}
	return tenancy.Select(ns, found)
}

// tenantNamespace is the namespace of the tenant an XR belongs to: a
// namespaced XR's own, else its claim's. A cluster-scoped XR created
// without a claim has none: only the platform can create one, and the
// policy does not govern it.
func tenantNamespace(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	return obj.GetLabels()["crossplane.io/claim-namespace"]
}

// checkArmadaTenancy asks for the tenancy policies of the Armada's tenant
// and refuses what the policy does not allow.
func checkArmadaTenancy(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, obj *unstructured.Unstructured, in *armada.Install, xr armada.XR) error {
	tenant := tenantNamespace(obj)
	if tenant == "" {
		return nil
	}
	requireTenancyPolicies(rsp, tenant)
	p, err := tenancyPolicy(req, tenant)
	if err != nil {
		return err
	}
	errs := p.CheckArmada(tenancy.Armada{Namespace: tenant, Spec: &in.Spec, Written: &xr.Spec, ClusterScope: armada.ClusterScopeRef(xr.ClusterScope)})
	if len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// checkQueueTenancy refuses a team queue its tenant's policy does not
// allow: an Armada in another namespace not listed, or a cluster-scope
// config not allowed.
func checkQueueTenancy(req *fnv1.RunFunctionRequest, tenant string, xr teamqueue.XR, target *armada.Install) error {
	if tenant == "" {
		return nil
	}
	p, err := tenancyPolicy(req, tenant)
	if err != nil {
		return err
	}
	name, ns := xr.Target()
	ref, inherited := xr.ScopeRef(target)
	errs := p.CheckTeamQueue(tenancy.TeamQueue{Namespace: tenant, ArmadaNamespace: ns, ArmadaName: name, ClusterScope: ref, Inherited: inherited})
	if len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}
