package function

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

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
	apiVersion := tenancyv1.Group + "/" + tenancyv1.Version
	require(rsp, tenancyRequirementNamespace, &fnv1.ResourceSelector{
		ApiVersion: apiVersion, Kind: tenancyv1.Kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: ns},
	})
	require(rsp, tenancyRequirementDefault, &fnv1.ResourceSelector{
		ApiVersion: apiVersion, Kind: tenancyv1.Kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: tenancyv1.DefaultPolicyName},
	})
}

// require adds a resource requirement to the response's others.
func require(rsp *fnv1.RunFunctionResponse, name string, sel *fnv1.ResourceSelector) {
	if rsp.GetRequirements() == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.GetRequirements().GetResources() == nil {
		rsp.Requirements.Resources = map[string]*fnv1.ResourceSelector{}
	}
	rsp.Requirements.Resources[name] = sel
}

// tenancyPolicy is the policy governing namespace ns among the required
// resources; fetched is false until Crossplane has fetched them. Before
// then nothing is checked: Crossplane fetches what the function requires
// and calls it again before it applies anything, and it stops at the first
// Fatal result, so refusing on a guess would refuse for good. (The
// response of a call without the policies is never the one Crossplane
// applies: the function always requires them.)
func tenancyPolicy(req *fnv1.RunFunctionRequest, ns string) (p tenancy.Policy, fetched bool, err error) {
	var found []*unstructured.Unstructured
	for _, key := range []string{tenancyRequirementNamespace, tenancyRequirementDefault} {
		// Only these two requirements are converted from their Structs.
		rs, ok, err := request.GetRequiredResource(req, key)
		if err != nil {
			return tenancy.Policy{}, false, err
		}
		if !ok {
			return tenancy.Policy{}, false, nil
		}
		for _, r := range rs {
			found = append(found, r.Resource)
		}
	}
	p, err = tenancy.Select(ns, found)
	return p, err == nil, err
}

// tenantNamespace is the namespace of the tenant an XR belongs to: a
// namespaced XR's own, else its claim's. A cluster-scoped XR created
// without a claim has none: only the platform can create one, and the
// policy does not govern it.
func tenantNamespace(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	return obj.GetLabels()[xcrd.LabelKeyClaimNamespace]
}

// checkArmadaTenancy asks for the tenancy policies of the Armada's tenant
// and refuses what the policy does not allow (the claim's job namespace
// names among it). It returns the policy the claim's job namespaces are
// composed under, the built-in one until Crossplane has fetched it.
func checkArmadaTenancy(
	req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, obj *unstructured.Unstructured, in *armada.Install, xr armada.XR,
) (tenancy.Policy, error) {
	tenant := tenantNamespace(obj)
	if tenant == "" {
		return tenancy.Policy{}, nil
	}
	requireTenancyPolicies(rsp, tenant)
	p, fetched, err := tenancyPolicy(req, tenant)
	if !fetched {
		return p, err
	}
	errs := p.CheckArmada(tenancy.Armada{Namespace: tenant, Spec: &in.Spec, Written: &xr.Spec, ClusterScope: armada.ClusterScopeRef(xr.ClusterScope)})
	errs = append(errs, p.CheckJobNamespaces(tenant, field.NewPath("spec", "jobNamespaces"), in.JobNamespaces())...)
	if len(errs) > 0 {
		return p, errs.ToAggregate()
	}
	return p, nil
}

// queueTenancy is the tenancy policy of a team queue's tenant and what it
// checks of the queue; ok is false for a queue no tenant owns (a
// cluster-scoped XArmadaQueue the platform created without a claim) and
// until Crossplane has fetched the policies.
func queueTenancy(req *fnv1.RunFunctionRequest, tenant string, xr teamqueue.XR) (p tenancy.Policy, q tenancy.TeamQueue, ok bool, err error) {
	if tenant == "" {
		return p, q, false, nil
	}
	p, fetched, err := tenancyPolicy(req, tenant)
	name, ns := xr.Target()
	return p, tenancy.TeamQueue{Namespace: tenant, ArmadaNamespace: ns, ArmadaName: name}, fetched, err
}

// checkQueueTarget asks for the tenancy policies of a team queue's tenant
// and refuses a queue on an Armada the policy does not list, or with job
// namespace names it does not allow, before the function asks for that
// Armada or those names. It returns the policy the queue's job namespaces
// are composed under: its tenant's, or the built-in one for a queue
// without a tenant; fetched is false until Crossplane has fetched the
// policies.
func checkQueueTarget(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, oxr *resource.Composite, xr teamqueue.XR) (tenancy.Policy, bool, error) {
	tenant := tenantNamespace(&oxr.Resource.Unstructured)
	if tenant == "" {
		return tenancy.Policy{}, true, nil
	}
	requireTenancyPolicies(rsp, tenant)
	p, q, fetched, err := queueTenancy(req, tenant, xr)
	if !fetched {
		return p, false, err
	}
	errs := p.CheckQueueTarget(q)
	errs = append(errs, p.CheckJobNamespaces(tenant, field.NewPath("spec", "namespaces"), xr.Spec.Namespaces)...)
	if len(errs) > 0 {
		return p, true, errs.ToAggregate()
	}
	return p, true, nil
}

// checkQueueScope refuses the cluster-scope config a team queue would
// compose through on target unless its tenant's policy allows it.
func checkQueueScope(req *fnv1.RunFunctionRequest, oxr *resource.Composite, xr teamqueue.XR, target *armada.Install) error {
	p, q, ok, err := queueTenancy(req, tenantNamespace(&oxr.Resource.Unstructured), xr)
	if !ok {
		return err
	}
	q.ClusterScope, q.Inherited = xr.ScopeRef(target)
	if errs := p.CheckQueueScope(q); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// refuse reports err, if any, as a Fatal result refusing an XR of kind,
// and says whether it did.
func refuse(rsp *fnv1.RunFunctionResponse, kind string, err error) bool {
	if err == nil {
		return false
	}
	response.Fatal(rsp, errors.Wrap(err, "invalid "+kind))
	return true
}
