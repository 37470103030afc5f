package function

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// testPolicies are the tenancy policies this package's tests run under:
// team-a's namespaced Armada composes through the ClusterProviderConfig
// "in-cluster", and team-ml's queues may attach to the Armadas the tests
// target.
var testPolicies = []string{
	`{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "team-a"},
	  "spec": {"providerConfigs": {"clusterScope": [{"kind": "ClusterProviderConfig", "name": "in-cluster"}]}}}`,
	`{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "team-ml"},
	  "spec": {"providerConfigs": {"clusterScope": [{"kind": "ClusterProviderConfig", "name": "in-cluster"}]},
	           "queueArmadas": [{"namespace": "armada", "name": "armada"}, {"namespace": "team-a", "name": "armada"}]}}`,
}

// withPolicies adds tenancy policies to a request's required resources,
// as Crossplane passes them once fetched. An empty list is a fetch that
// found none.
func withPolicies(req *fnv1.RunFunctionRequest, policies ...string) *fnv1.RunFunctionRequest {
	if req.RequiredResources == nil {
		req.RequiredResources = map[string]*fnv1.Resources{}
	}
	rs := &fnv1.Resources{}
	for _, p := range policies {
		rs.Items = append(rs.Items, &fnv1.Resource{Resource: resource.MustStructJSON(p)})
	}
	req.RequiredResources[tenancyRequirementNamespace] = rs
	req.RequiredResources[tenancyRequirementDefault] = &fnv1.Resources{}
	return req
}

// examplePolicies are examples/tenancy-policy.yaml's policies.
func examplePolicies(tb testing.TB) *fnv1.Resources {
	tb.Helper()
	docs, err := manifest.ReadDocs(testutil.Example("tenancy-policy.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	rs := &fnv1.Resources{}
	for _, m := range docs {
		s, err := structpb.NewStruct(m)
		if err != nil {
			tb.Fatal(err)
		}
		rs.Items = append(rs.Items, &fnv1.Resource{Resource: s})
	}
	return rs
}

// TestRunFunctionTenancy checks the function reads the tenancy policies:
// it asks for the one named after the tenant's namespace and "default",
// applies the namespace's own over "default", and refuses on the Accepted
// condition, composing nothing, what the policy does not allow.
func TestRunFunctionTenancy(t *testing.T) {
	workers := strings.Replace(validXR, `"spec": {`, `"spec": {"executors": [{"clusterId": "w", "pool": "default", "cluster": {"providerConfigRef": {"name": "worker-a"}}}],
		"executorApi": {"url": "armada.example:443"},`, 1)
	allowWorker := `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "armada"},
		"spec": {"providerConfigs": {"workerClusters": [{"name": "worker-a"}]}}}`
	allowWorkerByDefault := strings.Replace(allowWorker, `"name": "armada"`, `"name": "default"`, 1)
	refuseByDefault := `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "default"}, "spec": {"allowArmada": false}}`
	type want struct {
		refusal  string
		composed bool
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"NoPolicyOwnNamespace": {
			reason: "Without any policy, an Armada naming nothing outside its namespace composes.",
			req:    withPolicies(requestFor(validXR)),
			want:   want{composed: true},
		},
		"NotFetchedYet": {
			reason: "Before Crossplane fetched the policies nothing is refused (Crossplane stops at a Fatal result); it calls again with them before applying.",
			req:    requestFor(workers),
			want:   want{composed: true},
		},
		"NoPolicyFound": {
			reason: "Fetched and none found: the built-in default refuses a worker cluster.",
			req:    withPolicies(requestFor(workers)),
			want: want{refusal: `invalid XArmada: spec.executors[0].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "worker-a": not allowed by ` +
				`the built-in tenancy policy (there is no ArmadaTenancyPolicy named after the namespace or "default") spec.providerConfigs.workerClusters`},
		},
		"OwnPolicyAllows": {
			reason: "The policy named after the claim's namespace allows the worker cluster.",
			req:    withPolicies(requestFor(workers), allowWorker),
			want:   want{composed: true},
		},
		"DefaultPolicyAllows": {
			reason: "Without a policy of its own, the namespace is governed by \"default\".",
			req:    withPolicies(requestFor(workers), allowWorkerByDefault),
			want:   want{composed: true},
		},
		"OwnPolicyWinsOverDefault": {
			reason: "The namespace's own policy replaces \"default\" entirely: default's worker cluster is not inherited.",
			req: withPolicies(requestFor(workers), allowWorkerByDefault,
				`{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "armada"}, "spec": {}}`),
			want: want{refusal: `invalid XArmada: spec.executors[0].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "worker-a": not allowed by ` +
				`ArmadaTenancyPolicy "armada" spec.providerConfigs.workerClusters`},
		},
		"OtherNamespacesPolicyIgnored": {
			reason: "A policy named after another namespace does not govern this one.",
			req:    withPolicies(requestFor(workers), strings.Replace(allowWorker, `"name": "armada"`, `"name": "team-b"`, 1)),
			want: want{refusal: `invalid XArmada: spec.executors[0].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "worker-a": not allowed by ` +
				`the built-in tenancy policy (there is no ArmadaTenancyPolicy named after the namespace or "default") spec.providerConfigs.workerClusters`},
		},
		"NamespaceMayNotHoldAnArmada": {
			reason: "A default policy with allowArmada: false refuses a claim in a namespace without its own policy.",
			req:    withPolicies(requestFor(validXR), refuseByDefault),
			want: want{refusal: `invalid XArmada: metadata.namespace: Forbidden: namespace "armada" may not hold an Armada: not allowed by ` +
				`ArmadaTenancyPolicy "default" spec.allowArmada`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := want{composed: len(rsp.GetDesired().GetResources()) > 0, refusal: refusalOf(rsp)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			sel := rsp.GetRequirements().GetResources()
			for key, name := range map[string]string{tenancyRequirementNamespace: "armada", tenancyRequirementDefault: "default"} {
				if s := sel[key]; s.GetKind() != "ArmadaTenancyPolicy" || s.GetMatchName() != name {
					t.Errorf("%s\nrequirement %s: got %v, want ArmadaTenancyPolicy %q", tc.reason, key, s, name)
				}
			}
		})
	}
}

// TestRunFunctionTeamQueueTenancy checks a team queue on an Armada in
// another namespace is refused, before the function asks for that Armada,
// unless the team's policy lists it.
func TestRunFunctionTeamQueueTenancy(t *testing.T) {
	cases := map[string]struct {
		reason    string
		policies  []string
		refusal   string
		requested bool
	}{
		"NotListed": {
			reason:  "Without a policy listing the Armada, the queue is refused naming spec.armada and the rule, and the Armada is not fetched.",
			refusal: `invalid XArmadaQueue: spec.armada: Forbidden: Armada armada/armada is in another namespace and does not allow team "team-ml": not allowed by ` + builtinPolicy + ` spec.queueArmadas`,
		},
		"Listed": {
			reason:    "The team's policy lists the Armada: the function asks for it.",
			policies:  testPolicies,
			requested: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), withPolicies(requestFor(teamQueueXR), tc.policies...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.refusal, refusalOf(rsp)); diff != "" {
				t.Errorf("%s\nrefusal: -want, +got:\n%s", tc.reason, diff)
			}
			if got := rsp.GetRequirements().GetResources()[targetRequirement] != nil; got != tc.requested {
				t.Errorf("%s\ntarget requested: got %v, want %v", tc.reason, got, tc.requested)
			}
		})
	}
}

// builtinPolicy is how a refusal names the built-in policy.
const builtinPolicy = `the built-in tenancy policy (there is no ArmadaTenancyPolicy named after the namespace or "default")`

// TestRunFunctionQueueScopeTenancy checks the function refuses the
// cluster-scope config a namespaced team queue would compose through, its
// own or the one it inherits from the target Armada, unless the queue's
// tenant's policy lists it.
func TestRunFunctionQueueScopeTenancy(t *testing.T) {
	targetOnly := `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "team-ml"},
	  "spec": {"queueArmadas": [{"namespace": "team-a", "name": "armada"}]}}`
	ownScope := strings.Replace(namespacedQueueXR, `"groupOwners"`, `"clusterScope": {"providerConfigRef": {"name": "other"}}, "groupOwners"`, 1)
	cases := map[string]struct {
		reason   string
		xr       string
		policies []string
		refusal  string
	}{
		"InheritedAllowed": {
			reason:   "The queue inherits the target's ClusterProviderConfig in-cluster, which its tenant's policy lists.",
			xr:       namespacedQueueXR,
			policies: testPolicies,
		},
		"InheritedRefused": {
			reason:   "The tenant's policy lets the queue attach to the Armada but lists no cluster-scope config: the inherited one is refused.",
			xr:       namespacedQueueXR,
			policies: []string{targetOnly},
			refusal: `invalid ArmadaQueue: spec.clusterScope.providerConfigRef: Forbidden: unset, so the queue would compose through the target Armada's ` +
				`ClusterProviderConfig "in-cluster": not allowed by ArmadaTenancyPolicy "team-ml" spec.providerConfigs.clusterScope`,
		},
		"OwnRefused": {
			reason:   "The queue's own spec.clusterScope names a config its tenant's policy does not list.",
			xr:       ownScope,
			policies: testPolicies,
			refusal: `invalid ArmadaQueue: spec.clusterScope.providerConfigRef: Forbidden: ClusterProviderConfig "other": ` +
				`not allowed by ArmadaTenancyPolicy "team-ml" spec.providerConfigs.clusterScope`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := requestFor(tc.xr)
			req.RequiredResources = map[string]*fnv1.Resources{
				targetRequirement:        {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(namespacedXR)}}},
				"namespace-team-ml-jobs": {}, queueRequirement: {},
			}
			rsp, err := runFunction(t, newFunction(t), withPolicies(req, tc.policies...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.refusal, refusalOf(rsp)); diff != "" {
				t.Errorf("%s\nrefusal: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.refusal != "" && len(rsp.GetDesired().GetResources()) != 0 {
				t.Errorf("%s\nrefused, yet composed %d resources", tc.reason, len(rsp.GetDesired().GetResources()))
			}
			if tc.refusal == "" && len(rsp.GetDesired().GetResources()) == 0 {
				t.Errorf("%s\naccepted, yet composed nothing", tc.reason)
			}
		})
	}
}

// TestRunFunctionClaimJobNamespaces checks the claim's own job namespaces
// are composed under its tenant's policy, as team queues' are: the
// policy's Pod Security level on the namespace, its ResourceQuota in it,
// and a name the policy does not allow refused on the claim.
func TestRunFunctionClaimJobNamespaces(t *testing.T) {
	policy := func(jobNamespaces string) string {
		return `{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "ArmadaTenancyPolicy", "metadata": {"name": "armada"},
			"spec": {"jobNamespaces": ` + jobNamespaces + `}}`
	}
	type want struct {
		refusal string
		// enforce is the job namespace's Pod Security level; quota whether
		// its ResourceQuota is composed.
		enforce string
		quota   bool
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"BuiltIn": {
			reason: "Without a policy the claim's job namespace enforces restricted, with no quota.",
			req:    withPolicies(requestFor(validXR)),
			want:   want{enforce: "restricted"},
		},
		"PolicyGuards": {
			reason: "The tenant's policy sets the level and (once the namespace is observed) the ResourceQuota of the claim's job namespace.",
			req: withObservedNamespace(withPolicies(requestFor(validXR), policy(`{"podSecurity": "baseline", "resourceQuota": {"hard": {"pods": "10"}}}`)),
				"jobnamespace-armada-jobs", "armada-jobs", "armada-x1"),
			want: want{enforce: "baseline", quota: true},
		},
		"NameNotAllowed": {
			reason: "A job namespace name outside the policy's names is refused, naming the field and the setting.",
			req:    withPolicies(requestFor(validXR), policy(`{"names": ["jobs-*"]}`)),
			want: want{refusal: `invalid XArmada: spec.jobNamespaces[0]: Forbidden: namespace armada-jobs is not a name tenant armada's job namespaces ` +
				`may have; name one matching jobs-*: not allowed by ArmadaTenancyPolicy "armada" spec.jobNamespaces.names`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := want{refusal: refusalOf(rsp)}
			desired := rsp.GetDesired().GetResources()
			if ns := desired["jobnamespace-armada-jobs"]; ns != nil {
				got.enforce = ns.GetResource().GetFields()["metadata"].GetStructValue().GetFields()["labels"].GetStructValue().
					GetFields()["pod-security.kubernetes.io/enforce"].GetStringValue()
			}
			_, got.quota = desired["jobnamespace-armada-jobs-quota"]
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// withObservedNamespace adds to a request an observed Namespace name,
// composed as key by XR composite: what lives in a job namespace is
// composed once Crossplane has observed the namespace.
func withObservedNamespace(req *fnv1.RunFunctionRequest, key, name, composite string) *fnv1.RunFunctionRequest {
	if req.Observed.Resources == nil {
		req.Observed.Resources = map[string]*fnv1.Resource{}
	}
	req.Observed.Resources[key] = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "Namespace",
		"metadata": {"name": "` + name + `", "labels": {"crossplane.io/composite": "` + composite + `"}}}`)}
	return req
}
