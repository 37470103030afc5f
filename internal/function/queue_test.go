package function

import (
	"encoding/json"
	"strings"
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

// namespaceJSON is a Namespace as Crossplane returns it, with annotations.
func namespaceJSON(name, annotations string) string {
	return `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "` + name + `", "annotations": {` + annotations + `}}}`
}

// queueMRJSON is the team queue's provider-armada Queue, with labels and,
// if given, conditions.
func queueMRJSON(labels string, conditions ...string) string {
	return `{"apiVersion": "armada.m.armadaproject.io/v1alpha1", "kind": "Queue", ` +
		`"metadata": {"name": "armada-queue-ml", "namespace": "armada", "labels": {` + labels + `}}, ` +
		`"status": {"conditions": [` + strings.Join(conditions, ", ") + `]}}`
}

// anyName is team-ml's test policy, allowing any job namespace name.
const anyName = `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "team-ml"},
	"spec": {"queueArmadas": [{"namespace": "armada", "name": "armada"}], "jobNamespaces": {"names": ["*"]}}}`

// guarded is team-ml's test policy, with a ResourceQuota and a LimitRange
// for its job namespaces.
const guarded = `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "team-ml"},
	"spec": {"queueArmadas": [{"namespace": "armada", "name": "armada"}], "jobNamespaces": {
	  "podSecurity": "baseline", "resourceQuota": {"hard": {"pods": "10"}},
	  "limitRange": {"limits": [{"type": "Container", "default": {"cpu": "1"}}]}}}}`

func TestRunFunctionTeamQueue(t *testing.T) {
	// request is the team queue xr with required resources by requirement
	// name; a requirement absent from required is not fetched yet.
	request := func(xr string, required map[string][]string) *fnv1.RunFunctionRequest {
		req := requestFor(xr)
		if required == nil {
			return req
		}
		req.RequiredResources = map[string]*fnv1.Resources{}
		for key, objs := range required {
			rs := &fnv1.Resources{}
			for _, x := range objs {
				rs.Items = append(rs.Items, &fnv1.Resource{Resource: resource.MustStructJSON(x)})
			}
			req.RequiredResources[key] = rs
		}
		req = withPolicies(req, testPolicies...)
		return req
	}
	// free is every name fetched and free, with target.
	free := func(target ...string) map[string][]string {
		return map[string][]string{targetRequirement: target, "namespace-team-ml-jobs": nil, queueRequirement: nil}
	}
	with := func(m map[string][]string, key string, objs ...string) map[string][]string {
		m[key] = objs
		return m
	}
	namespaces := func(ns ...string) string {
		b, err := json.Marshal(ns)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Replace(teamQueueXR, `"namespaces": ["team-ml-jobs"]`, `"namespaces": `+string(b), 1)
	}
	type want struct {
		fatal     string
		desired   []string
		requested []string
	}
	policies := []string{tenancyRequirementDefault, tenancyRequirementNamespace}
	asked := append([]string{"namespace-team-ml-jobs", targetRequirement}, policies...)
	all := append([]string{"namespace-team-ml-jobs", queueRequirement, targetRequirement}, policies...)
	// composed is what a team queue composes: its job namespace, the
	// executor's and binoculars' RoleBindings there, and its Queue.
	// composed is the first reconcile's: the job namespace first, what
	// lives in it once it is observed (armada.NamespacesFirst).
	composed := []string{
		"namespace-team-ml-jobs", "queue",
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"AsksForTheTarget": {
			reason: "Before Crossplane fetched the target Armada the function asks for it and the job namespaces, and composes nothing yet.",
			req:    request(teamQueueXR, nil),
			want:   want{requested: asked, desired: []string{}},
		},
		"UnknownTarget": {
			reason: "A target Armada that does not exist is a Fatal result naming spec.armada.name.",
			req:    request(teamQueueXR, map[string][]string{targetRequirement: nil}),
			want:   want{requested: asked, desired: []string{}, fatal: `invalid XArmadaQueue: spec.armada.name: Not found: no ArmadaClaim "armada" in namespace "armada"`},
		},
		"AsksForTheNames": {
			reason: "With the target, the function asks for the Queue of its name too, and composes nothing until it knows what exists.",
			req:    request(teamQueueXR, map[string][]string{targetRequirement: {validXR}}),
			want:   want{requested: all, desired: []string{}},
		},
		"Composes": {
			reason: "With the target, and the names free, the queue and the jobs' namespace are composed.",
			req:    request(teamQueueXR, free(validXR)),
			want:   want{requested: all, desired: composed},
		},
		"NamespaceExists": {
			reason: "A job namespace that exists without this queue's mark (another team's, with its Secrets) is refused, not adopted.",
			req:    request(teamQueueXR, with(free(validXR), "namespace-team-ml-jobs", namespaceJSON("team-ml-jobs", ""))),
			want: want{requested: all, desired: []string{}, fatal: "invalid XArmadaQueue: spec.namespaces[0]: Forbidden: namespace team-ml-jobs already exists " +
				"and was not created by this queue; it is not adopted (nor ever deleted) by this queue: name a namespace that does not exist yet"},
		},
		"NamespaceOfAnotherQueue": {
			reason: "A job namespace another queue composed is refused, naming that queue.",
			req: request(teamQueueXR, with(free(validXR), "namespace-team-ml-jobs",
				namespaceJSON("team-ml-jobs", `"armadaproject.io/owner": "ArmadaQueueClaim team-y/ml"`))),
			want: want{requested: all, desired: []string{}, fatal: "invalid XArmadaQueue: spec.namespaces[0]: Forbidden: namespace team-ml-jobs already exists " +
				"and belongs to ArmadaQueueClaim team-y/ml; it is not adopted (nor ever deleted) by this queue: name a namespace that does not exist yet"},
		},
		"NamespaceMarked": {
			reason: "A job namespace carrying this queue's mark is its own.",
			req: request(teamQueueXR, with(free(validXR), "namespace-team-ml-jobs",
				namespaceJSON("team-ml-jobs", `"armadaproject.io/owner": "ArmadaQueueClaim team-ml/ml"`))),
			want: want{requested: all, desired: composed},
		},
		"ArmadasNamespace": {
			reason: "The target Armada's own namespace is never a team's job namespace, even where the policy allows any name.",
			req:    withPolicies(request(namespaces("armada"), map[string][]string{targetRequirement: {validXR}, "namespace-armada": {namespaceJSON("armada", "")}, queueRequirement: nil}), anyName),
			want: want{requested: append([]string{"namespace-armada", queueRequirement, targetRequirement}, policies...), desired: []string{}, fatal: "invalid XArmadaQueue: " +
				"spec.namespaces[0]: Forbidden: namespace armada is Armada armada/armada's own; name a namespace for the team's jobs that does not exist yet"},
		},
		"ArmadasJobNamespace": {
			reason: "The target Armada's own queues' job namespace is never a team's, existing or not, even where the policy allows any name: its queue's jobs would run there.",
			req: withPolicies(request(namespaces("armada-jobs"), map[string][]string{
				targetRequirement: {validXR}, "namespace-armada-jobs": nil, queueRequirement: nil,
			}), anyName),
			want: want{requested: append([]string{"namespace-armada-jobs", queueRequirement, targetRequirement}, policies...), desired: []string{}, fatal: "invalid XArmadaQueue: " +
				"spec.namespaces[0]: Forbidden: namespace armada-jobs is a job namespace of Armada armada/armada's own queues (its spec.jobNamespaces); " +
				"name a namespace for the team's jobs that does not exist yet"},
		},
		"PlatformNamespaces": {
			reason: "Kubernetes' and Crossplane's namespaces are never a team's job namespaces, existing or not, even where the policy allows any name.",
			req: withPolicies(request(namespaces("kube-system", "crossplane-system"), map[string][]string{
				targetRequirement: {validXR}, "namespace-kube-system": nil, "namespace-crossplane-system": nil, queueRequirement: nil,
			}), anyName),
			want: want{requested: append([]string{"namespace-crossplane-system", "namespace-kube-system", queueRequirement, targetRequirement}, policies...), desired: []string{}, fatal: "invalid XArmadaQueue: " +
				"[spec.namespaces[0]: Forbidden: namespace kube-system is the platform's; name a namespace for the team's jobs that does not exist yet, " +
				"spec.namespaces[1]: Forbidden: namespace crossplane-system is the platform's; name a namespace for the team's jobs that does not exist yet]"},
		},
		"NameOutsidePolicy": {
			reason: "A job namespace the tenant's policy does not allow (by default, one without the tenant's namespace as prefix) is refused before the function asks for the target or the name.",
			req:    request(namespaces("team-ml-jobs", "victim"), free(validXR)),
			want: want{requested: policies, desired: []string{}, fatal: "invalid XArmadaQueue: spec.namespaces[1]: Forbidden: namespace victim is not a name " +
				`tenant team-ml's job namespaces may have; name one matching team-ml-*: not allowed by ArmadaTenancyPolicy "team-ml" spec.jobNamespaces.names`},
		},
		"Guarded": {
			reason: "Once the job namespace is observed, its ServiceAccount, RoleBindings and the policy's ResourceQuota and LimitRange are composed in it.",
			req:    withObservedNamespace(withPolicies(request(teamQueueXR, free(validXR)), guarded), "namespace-team-ml-jobs", "team-ml-jobs", "ml-x2"),
			want: want{requested: all, desired: append([]string{
				"namespace-team-ml-jobs-binoculars-jobs", "namespace-team-ml-jobs-executor-local-jobs",
				"namespace-team-ml-jobs-limits", "namespace-team-ml-jobs-quota", "namespace-team-ml-jobs-serviceaccount",
			}, composed...)},
		},
		"QueueOfAnotherClaim": {
			reason: "A Queue of the same name another claim composed is refused, not adopted.",
			req:    request(teamQueueXR, with(free(validXR), queueRequirement, queueMRJSON(`"crossplane.io/composite": "other-x9"`))),
			want: want{requested: all, desired: []string{}, fatal: `invalid XArmadaQueue: spec.queueName: Invalid value: "ml": queue ml of Armada armada/armada ` +
				`already exists and belongs to composite resource other-x9; choose another spec.queueName (it defaults to the claim's name)`},
		},
		"QueueComposedBefore": {
			reason: "The Queue Crossplane composed for this XR before marks existed is its own.",
			req:    request(teamQueueXR, with(free(validXR), queueRequirement, queueMRJSON(`"crossplane.io/composite": "ml-x2"`))),
			want:   want{requested: all, desired: composed},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), tc.req)
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
			requested := []string{}
			for k := range rsp.GetRequirements().GetResources() {
				requested = append(requested, k)
			}
			got := want{fatal: fatal, desired: desired, requested: requested}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRunFunctionTeamQueueUnsynced: why provider-armada cannot create the
// team's queue (here, a queue of that name Armada has and the Queue did not
// create) reaches the claim's QueueReady condition.
func TestRunFunctionTeamQueueUnsynced(t *testing.T) {
	req := requestFor(teamQueueXR)
	req.RequiredResources = map[string]*fnv1.Resources{
		targetRequirement:        {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(validXR)}}},
		"namespace-team-ml-jobs": {}, queueRequirement: {},
	}
	req = withPolicies(req, testPolicies...)
	why := "observe failed: queue ml already exists in Armada and this Queue did not create it: it is not adopted (nor ever deleted)"
	req.Observed.Resources = map[string]*fnv1.Resource{"queue": {Resource: resource.MustStructJSON(queueMRJSON(`"crossplane.io/composite": "ml-x2"`,
		`{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "`+why+`"}`))}}
	rsp, err := runFunction(t, newFunction(t), req)
	if err != nil {
		t.Fatal(err)
	}
	got := conditionOf(rsp, "QueueReady").GetMessage()
	want := "Waiting for provider-armada to create queue ml in Armada armada/armada: " + why
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QueueReady message: -want, +got:\n%s", diff)
	}
}
