package function

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// TestRunFunctionNotComposed checks "already composed" comes only from
// observed resources the XR composed: one its resource references name
// that carries neither its controller reference nor its mark (a
// PriorityClass the platform made) is refused with a fatal result, so
// Crossplane neither applies nor deletes anything.
func TestRunFunctionNotComposed(t *testing.T) {
	pc := func(meta string) *fnv1.Resource {
		return &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", ` +
			`"metadata": {"name": "platform-high", ` + meta + `}, "value": 100000}`)}
	}
	cases := map[string]struct {
		reason   string
		xr       string
		observed *fnv1.Resource
		refusal  string
	}{
		"Unmarked": {
			reason:   "A PriorityClass the platform made, named in spec.resourceRefs, is not the XR's.",
			xr:       validXR,
			observed: pc(`"labels": {"tier": "platform"}`),
			refusal: "invalid XArmada: spec.resourceRefs: Invalid value: names PriorityClass platform-high, which this XArmada did not compose: " +
				"Crossplane would pass it to the function as composed, to be changed and deleted with it; remove it from spec.resourceRefs " +
				"(nothing is applied or deleted until then)",
		},
		"NamespacedUnmarked": {
			reason:   "A namespaced Armada's author writes spec.crossplane.resourceRefs: the refusal names that field.",
			xr:       namespacedXR,
			observed: pc(`"annotations": {"armadaproject.io/owner": "Armada team-b/armada"}`),
			refusal: "invalid Armada: spec.crossplane.resourceRefs: Invalid value: names PriorityClass platform-high, which this Armada did not " +
				"compose: Crossplane would pass it to the function as composed, to be changed and deleted with it; remove it from " +
				"spec.crossplane.resourceRefs (nothing is applied or deleted until then)",
		},
		"Controlled": {
			reason: "What Crossplane composed for the XR carries its controller reference.",
			xr:     namespacedXR,
			observed: pc(`"ownerReferences": [{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "Armada", "name": "armada", ` +
				`"uid": "6b1c2f0e", "controller": true}]`),
		},
		"Marked": {
			reason:   "What carries the XR's mark is its own.",
			xr:       namespacedXR,
			observed: pc(`"annotations": {"armadaproject.io/owner": "Armada team-a/armada"}`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := requestFor(tc.xr)
			req.Observed.Resources = map[string]*fnv1.Resource{"priorityclass-platform-high": tc.observed}
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			var fatal string
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					fatal = r.GetMessage()
				}
			}
			if diff := cmp.Diff(tc.refusal, fatal); diff != "" {
				t.Errorf("%s\nfatal result: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.refusal != "" && len(rsp.GetDesired().GetResources()) != 0 {
				t.Errorf("%s\nrefused, yet %d resources desired", tc.reason, len(rsp.GetDesired().GetResources()))
			}
		})
	}
}
