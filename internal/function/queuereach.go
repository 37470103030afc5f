package function

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/teamqueue"
)

// Requirement names of what a team queue would compose by name: each job
// namespace, and the Queue in the target Armada's namespace.
const (
	namespaceRequirement = "namespace-"
	queueRequirement     = "queue"
)

// namespaceSelectors ask Crossplane for the team queue's job namespaces,
// so the function sees which exist before it composes them.
func namespaceSelectors(xr teamqueue.XR, sel map[string]*fnv1.ResourceSelector) {
	for _, ns := range xr.Spec.Namespaces {
		sel[namespaceRequirement+ns] = &fnv1.ResourceSelector{
			ApiVersion: "v1",
			Kind:       "Namespace",
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: ns},
		}
	}
}

// queueSelector asks Crossplane for the Queue of the team queue's name in
// the target Armada's namespace.
func queueSelector(xr teamqueue.XR, target *armada.Install) *fnv1.ResourceSelector {
	name := target.Queue(xr.QueueName(), armadav1.QueueParameters{}, "").GetName()
	return &fnv1.ResourceSelector{
		ApiVersion: armadav1.SchemeGroupVersion.String(),
		Kind:       "Queue",
		Match:      &fnv1.ResourceSelector_MatchName{MatchName: name},
		Namespace:  &target.Namespace,
	}
}

// allFetched says whether Crossplane has fetched every requirement: until it
// has, the function cannot tell a free name from a taken one.
func allFetched(required map[string][]resource.Required, sel map[string]*fnv1.ResourceSelector) bool {
	for key := range sel {
		if _, ok := required[key]; !ok {
			return false
		}
	}
	return true
}

// queueExisting is what exists of the names a team queue composes, from
// the required resources, and what the XR already composes.
func queueExisting(required map[string][]resource.Required, observed map[resource.Name]resource.ObservedComposed) teamqueue.Existing {
	found := teamqueue.Existing{Namespaces: map[string]metav1.Object{}, Composed: map[string]bool{}}
	for key, items := range required {
		for _, r := range items {
			switch {
			case key == queueRequirement:
				found.Queue = r.Resource
			case strings.HasPrefix(key, namespaceRequirement):
				found.Namespaces[r.Resource.GetName()] = r.Resource
			}
		}
	}
	for name := range observed {
		found.Composed[string(name)] = true
	}
	return found
}

// warnNotAdopted reports, on the XR and its claim, each namespace in
// another cluster that existed before the Object composing it, which the
// Object therefore only observes (see armada.NotAdopted).
func warnNotAdopted(rsp *fnv1.RunFunctionResponse, foreign []string) {
	for _, msg := range foreign {
		response.Warning(rsp, errors.New(msg)).TargetCompositeAndClaim()
	}
}
