package function

import (
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

// The Accepted condition tells the claim's owner whether the function
// accepted the XR. Every refusal reaches it: an invalid spec, a name
// another Armada owns, a refused mode switch or downgrade, a missing
// target Armada. The cluster-scoped XR is often unreadable to a team; the
// claim is not.
const (
	ConditionAccepted = "Accepted"

	ReasonAccepted = "Accepted"
	ReasonRefused  = "Refused"
)

// reportAcceptance is the one place that turns the response's fatal
// results into the Accepted condition on the XR and its claim, and points
// the results at the claim too, so each refusal is also an event there.
// Crossplane keeps a function's conditions until it sets them again, so
// an accepted XR reports Accepted=True: a fixed claim loses its refusal.
func reportAcceptance(rsp *fnv1.RunFunctionResponse) {
	var refusals []string
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() != fnv1.Severity_SEVERITY_FATAL {
			continue
		}
		r.Target = fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()
		refusals = append(refusals, r.GetMessage())
	}
	if len(refusals) == 0 {
		response.ConditionTrue(rsp, ConditionAccepted, ReasonAccepted).
			WithMessage("The spec is valid and every name it composes is free").TargetCompositeAndClaim()
		return
	}
	response.ConditionFalse(rsp, ConditionAccepted, ReasonRefused).
		WithMessage(strings.Join(refusals, "; ")).TargetCompositeAndClaim()
}
