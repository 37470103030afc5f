package function

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

const teamQueueXR = `{
	"apiVersion": "platform.armadaproject.io/v1alpha1",
	"kind": "XArmadaQueue",
	"metadata": {"name": "ml-x2", "labels": {"crossplane.io/claim-name": "ml", "crossplane.io/claim-namespace": "team-ml"}},
	"spec": {"armada": {"name": "armada", "namespace": "armada"}, "groupOwners": ["team-ml"], "namespaces": ["team-ml-jobs"]}
}`

func TestRunFunctionTeamQueue(t *testing.T) {
	withTarget := func(targets ...string) *fnv1.RunFunctionRequest {
		req := requestFor(teamQueueXR)
		rs := &fnv1.Resources{}
		for _, x := range targets {
			rs.Items = append(rs.Items, &fnv1.Resource{Resource: resource.MustStructJSON(x)})
		}
		req = withPolicies(req, testPolicies...)
		req.RequiredResources[targetRequirement] = rs
		return req
	}
	type want struct {
		fatal     string
		desired   []string
		requested bool
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"AsksForTheTarget": {
			reason: "Before Crossplane fetched the target Armada the function asks for it and composes nothing yet.",
			req:    requestFor(teamQueueXR),
			want:   want{requested: true, desired: []string{}},
		},
		"UnknownTarget": {
			reason: "A target Armada that does not exist is a Fatal result naming spec.armada.name.",
			req:    withTarget(),
			want:   want{requested: true, desired: []string{}, fatal: `invalid XArmadaQueue: spec.armada.name: Not found: no ArmadaClaim "armada" in namespace "armada"`},
		},
		"Composes": {
			reason: "With the target, the queue and the jobs' namespace are composed.",
			req:    withTarget(validXR),
			want:   want{requested: true, desired: []string{"namespace-team-ml-jobs", "queue"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := newFunction(t).RunFunction(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			fatal := ""
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					fatal = r.GetMessage()
				}
			}
			desired := make([]string, 0, len(rsp.GetDesired().GetResources()))
			for k := range rsp.GetDesired().GetResources() {
				desired = append(desired, k)
			}
			got := want{fatal: fatal, desired: desired, requested: rsp.GetRequirements().GetResources()[targetRequirement] != nil}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
