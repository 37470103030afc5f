package function

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	nsv1alpha1 "github.com/armadaproject/armada-crossplane/apis/namespaced/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/teamqueue"
)

// targetRequirement names the required resource holding the target
// Armada's XR.
const targetRequirement = "target-armada"

// The XR kinds of a team's queue: claimed, and namespaced.
const (
	kindTeamQueue           = "XArmadaQueue"
	kindNamespacedTeamQueue = "ArmadaQueue"
)

// runTeamQueue composes an XArmadaQueue: it asks Crossplane for the target
// Armada's XR, and renders the queue in it once it has it.
func (f *Function) runTeamQueue(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, oxr *resource.Composite) {
	xr, err := decodeTeamQueue(oxr)
	if err != nil {
		response.Fatal(rsp, err)
		return
	}
	kind := oxr.Resource.GetKind()
	policy, policyFetched, err := checkQueueTarget(req, rsp, oxr, xr)
	if refuse(rsp, kind, err) {
		return
	}
	sel := map[string]*fnv1.ResourceSelector{targetRequirement: targetSelector(xr)}
	namespaceSelectors(xr, sel)
	for k, v := range sel {
		require(rsp, k, v)
	}
	required, err := request.GetRequiredResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get required resources"))
		return
	}
	targets, fetched := required[targetRequirement]
	if !fetched || !policyFetched {
		// Crossplane calls again with the target and the policies.
		return
	}
	target, err := targetInstall(xr, kind, targets)
	if err != nil {
		response.Fatal(rsp, err)
		return
	}
	if refuse(rsp, kind, checkQueueScope(req, oxr, xr, target)) {
		return
	}
	sel[queueRequirement] = queueSelector(xr, target)
	require(rsp, queueRequirement, sel[queueRequirement])
	if !allFetched(required, sel) {
		// Crossplane calls again with what exists of the names.
		return
	}
	observed, ok := ownObserved(req, rsp, oxr, xr.Owner())
	if !ok {
		return
	}
	if errs := teamqueue.CheckReach(xr, target, queueExisting(required, observed)); len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid "+kind))
		return
	}
	out, errs := teamqueue.Render(xr, target, policy)
	if len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid "+kind))
		return
	}
	o := armada.Observe(unstructuredOf(observed))
	for i := range out.Objects {
		out.Objects[i].Ready = o.Ready[out.Objects[i].Key] || (out.Objects[i].Key != teamqueue.KeyQueue && o.Keys[out.Objects[i].Key])
	}
	ready := o.Ready[teamqueue.KeyQueue]
	warnNotAdopted(rsp, armada.NotAdopted(out.Objects, unstructuredOf(observed)))
	out.Objects = armada.NamespacesFirst(out.Objects, o.Keys)
	if err := setDesired(rsp, out.Objects, out.Status, ready); err != nil {
		response.Fatal(rsp, err)
		return
	}
	queueReady(rsp, out.Status, ready, o.Unsynced[teamqueue.KeyQueue])
	f.log.Debug("Composed team queue", "xr", xr.Name, "queue", out.Status.Queue, "ready", ready)
}

// targetInstall is the team queue's target Armada, from the XRs Crossplane
// found for it: an error names spec.armada.name when there is none.
func targetInstall(xr teamqueue.XR, kind string, targets []resource.Required) (*armada.Install, error) {
	name, ns := xr.Target()
	if len(targets) == 0 {
		target := "ArmadaClaim"
		if xr.Namespace != "" {
			target = kindNamespacedArmada
		}
		return nil, errors.Errorf("invalid %s: spec.armada.name: Not found: no %s %q in namespace %q", kind, target, name, ns)
	}
	txr, err := decodeXR(targets[0].Resource.Object)
	if err != nil {
		return nil, errors.Wrap(err, "cannot decode the target Armada")
	}
	target, errs := armada.New(txr)
	if len(errs) > 0 {
		return nil, errors.Wrap(errs.ToAggregate(), "target Armada "+ns+"/"+name+" is invalid")
	}
	return target, nil
}

// queueReady reports on the XR and its claim whether the team's queue
// exists in Armada, and if not, why provider-armada has not created it
// (unsynced, the Queue's Synced message).
func queueReady(rsp *fnv1.RunFunctionResponse, s v1alpha1.ArmadaQueueStatus, ready bool, unsynced string) {
	if ready {
		response.ConditionTrue(rsp, "QueueReady", "Available").
			WithMessage("Queue " + s.Queue + " exists in Armada " + s.Armada).TargetCompositeAndClaim()
		return
	}
	msg := "Waiting for provider-armada to create queue " + s.Queue + " in Armada " + s.Armada
	if unsynced != "" {
		// Such as a queue of this name that Armada has and the Queue did
		// not create, which provider-armada neither adopts nor deletes:
		// the team reads it here.
		msg += ": " + unsynced
	}
	response.ConditionFalse(rsp, "QueueReady", "Creating").WithMessage(msg).TargetCompositeAndClaim()
}

// decodeTeamQueue reads a team queue XR of either shape: an XArmadaQueue,
// or a namespaced ArmadaQueue with its namespace and spec.clusterScope.
func decodeTeamQueue(oxr *resource.Composite) (teamqueue.XR, error) {
	u := oxr.Resource
	xr := teamqueue.XR{Name: u.GetName(), Labels: u.GetLabels(), Namespace: u.GetNamespace()}
	if xr.Namespace == "" {
		return xr, decodeSpec(u.Object, kindTeamQueue, &xr.Spec)
	}
	var spec nsv1alpha1.ArmadaQueueSpec
	if err := decodeSpec(u.Object, kindNamespacedTeamQueue, &spec); err != nil {
		return xr, err
	}
	xr.Spec = spec.ArmadaQueueSpec
	if spec.ClusterScope != nil {
		xr.ClusterScope = &spec.ClusterScope.ProviderConfigRef
	}
	return xr, nil
}

// targetSelector finds the queue's Armada (xr.Target): the XArmada of an ArmadaClaim
// for an XArmadaQueue, the namespaced Armada for an ArmadaQueue.
func targetSelector(xr teamqueue.XR) *fnv1.ResourceSelector {
	name, ns := xr.Target()
	if xr.Namespace != "" {
		return &fnv1.ResourceSelector{
			ApiVersion: "platform.armadaproject.io/v1alpha1",
			Kind:       kindNamespacedArmada,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: name},
			Namespace:  &ns,
		}
	}
	return &fnv1.ResourceSelector{
		ApiVersion: "platform.armadaproject.io/v1alpha1",
		Kind:       "XArmada",
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{
			xcrd.LabelKeyClaimName: name, xcrd.LabelKeyClaimNamespace: ns,
		}}},
	}
}
