package function

import (
	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/teamqueue"
)

// targetRequirement names the required resource holding the target
// Armada's XR.
const targetRequirement = "target-armada"

// kindTeamQueue is the XR kind of a team's queue.
const kindTeamQueue = "XArmadaQueue"

// runTeamQueue composes an XArmadaQueue: it asks Crossplane for the target
// Armada's XR, and renders the queue in it once it has it.
func (f *Function) runTeamQueue(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, oxr *resource.Composite) {
	xr := teamqueue.XR{Name: oxr.Resource.GetName(), Labels: oxr.Resource.GetLabels()}
	if err := decodeSpec(oxr.Resource.Object, kindTeamQueue, &xr.Spec); err != nil {
		response.Fatal(rsp, err)
		return
	}
	name, ns := xr.Target()
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		targetRequirement: {
			ApiVersion: "platform.armadaproject.io/v1alpha1",
			Kind:       "XArmada",
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{
				"crossplane.io/claim-name": name, "crossplane.io/claim-namespace": ns,
			}}},
		},
	}}
	required, err := request.GetRequiredResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get required resources"))
		return
	}
	targets, fetched := required[targetRequirement]
	if !fetched {
		// Crossplane calls again with the target.
		return
	}
	if len(targets) == 0 {
		response.Fatal(rsp, errors.Errorf("invalid XArmadaQueue: spec.armada.name: Not found: no ArmadaClaim %q in namespace %q", name, ns))
		return
	}
	txr, err := decodeXR(targets[0].Resource.Object)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot decode the target Armada"))
		return
	}
	target, errs := armada.New(txr)
	if len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "target Armada "+ns+"/"+name+" is invalid"))
		return
	}
	out, errs := teamqueue.Render(xr, target)
	if len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid XArmadaQueue"))
		return
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composed resources"))
		return
	}
	o := armada.Observe(unstructuredOf(observed))
	for i := range out.Objects {
		out.Objects[i].Ready = o.Ready[out.Objects[i].Key] || (out.Objects[i].Key != teamqueue.KeyQueue && o.Keys[out.Objects[i].Key])
	}
	ready := o.Ready[teamqueue.KeyQueue]
	if err := setDesired(rsp, out.Objects, out.Status, ready); err != nil {
		response.Fatal(rsp, err)
		return
	}
	if ready {
		response.ConditionTrue(rsp, "QueueReady", "Available").
			WithMessage("Queue " + out.Status.Queue + " exists in Armada " + out.Status.Armada).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, "QueueReady", "Creating").
			WithMessage("Waiting for provider-armada to create queue " + out.Status.Queue + " in Armada " + out.Status.Armada).TargetCompositeAndClaim()
	}
	f.log.Debug("Composed team queue", "xr", xr.Name, "queue", out.Status.Queue, "ready", ready)
}
