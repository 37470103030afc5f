package function

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// namespacedXR is a namespaced Armada as Crossplane v2 sends it: in its
// namespace, with spec.crossplane and no claim, no spec.namespace.
const namespacedXR = `{
	"apiVersion": "platform.armadaproject.io/v1alpha1",
	"kind": "Armada",
	"metadata": {"name": "armada", "namespace": "team-a", "uid": "6b1c2f0e"},
	"spec": {
		"crossplane": {"compositionRef": {"name": "armadas.platform.armadaproject.io"}, "resourceRefs": [
			{"apiVersion": "v1", "kind": "Secret", "name": "armada-credentials"}
		]},
		"clusterScope": {"providerConfigRef": {"name": "in-cluster"}},
		"postgres": {"host": "pg", "user": "armada", "passwordSecretRef": {"name": "pg", "key": "password"}},
		"redis": {"addrs": ["redis:6379"]},
		"pulsar": {"url": "pulsar://pulsar:6650", "adminURL": "http://pulsar:8080"},
		"auth": {"basicUsers": [{"name": "admin", "groups": ["armada-admins"]}]}
	}
}`

// TestRunFunctionNamespaced checks the modern XR shape: everything is
// composed in the XR's namespace, cluster-scoped objects only inside
// provider-kubernetes Objects, and a missing spec.clusterScope is refused
// on the Accepted condition, naming the field.
func TestRunFunctionNamespaced(t *testing.T) {
	cases := map[string]struct {
		reason  string
		xr      string
		refusal string
	}{
		"Composes": {
			reason: "A namespaced Armada with spec.clusterScope is accepted and composes only namespaced objects in its namespace.",
			xr:     namespacedXR,
		},
		"NoClusterScope": {
			reason: "Without spec.clusterScope the function refuses, saying what to configure.",
			xr:     strings.Replace(namespacedXR, `"clusterScope": {"providerConfigRef": {"name": "in-cluster"}},`, "", 1),
			refusal: "invalid Armada: spec.clusterScope.providerConfigRef: Required value: a namespaced Armada composes its cluster-scoped " +
				"objects (PriorityClasses, ClusterRoleBindings, job Namespaces, ValidatingAdmissionPolicies) as provider-kubernetes Objects in namespace team-a; " +
				"name the kubernetes.m.crossplane.io ClusterProviderConfig (or a ProviderConfig in this namespace) that reaches this cluster",
		},
		"SpecNamespace": {
			reason:  "spec.namespace does not exist on the namespaced kind; without the XRD's schema it is refused, not obeyed.",
			xr:      strings.Replace(namespacedXR, `"postgres"`, `"namespace": "elsewhere", "postgres"`, 1),
			refusal: "invalid Armada: spec.namespace: Forbidden: a namespaced Armada runs in its own namespace (team-a); remove spec.namespace",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), withPolicies(requestFor(tc.xr), testPolicies...))
			if err != nil {
				t.Fatal(err)
			}
			want := &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: ReasonAccepted,
				Message: ptrTo("The spec is valid and every name it composes is free"), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			}
			if tc.refusal != "" {
				want.Status, want.Reason, want.Message = fnv1.Status_STATUS_CONDITION_FALSE, ReasonRefused, ptrTo(tc.refusal)
			}
			if diff := cmp.Diff(want, conditionOf(rsp, ConditionAccepted), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nAccepted condition: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.refusal != "" {
				if n := len(rsp.GetDesired().GetResources()); n != 0 {
					t.Errorf("%s\nrefused, yet %d resources desired", tc.reason, n)
				}
				return
			}
			wrapped := 0
			for key, r := range rsp.GetDesired().GetResources() {
				u := r.GetResource().AsMap()
				meta, _ := u["metadata"].(map[string]any)
				if meta["namespace"] != "team-a" {
					t.Errorf("%s\n%s (%s) is in namespace %v, want team-a", tc.reason, key, u["kind"], meta["namespace"])
				}
				if u["kind"] == "Object" && strings.HasPrefix(key, "priorityclass-") {
					wrapped++
				}
			}
			if wrapped == 0 {
				t.Errorf("%s\nno PriorityClass composed through a provider-kubernetes Object", tc.reason)
			}
		})
	}
}

const namespacedQueueXR = `{
	"apiVersion": "platform.armadaproject.io/v1alpha1",
	"kind": "ArmadaQueue",
	"metadata": {"name": "ml", "namespace": "team-ml"},
	"spec": {"crossplane": {"compositionRef": {"name": "armadaqueues.platform.armadaproject.io"}},
		"armada": {"name": "armada", "namespace": "team-a"}, "groupOwners": ["team-ml"], "namespaces": ["team-ml-jobs"]}
}`

// TestRunFunctionNamespacedTeamQueue checks the namespaced queue: it asks
// for the namespaced Armada by name in its namespace, and composes, in its
// own namespace, Objects carrying the Queue (beside the Armada) and the
// jobs' namespace, through the Armada's cluster-scope config.
func TestRunFunctionNamespacedTeamQueue(t *testing.T) {
	req := requestFor(namespacedQueueXR)
	rsp, err := runFunction(t, newFunction(t), req)
	if err != nil {
		t.Fatal(err)
	}
	ns := "team-a"
	wantSel := &fnv1.ResourceSelector{
		ApiVersion: "platform.armadaproject.io/v1alpha1", Kind: "Armada",
		Match: &fnv1.ResourceSelector_MatchName{MatchName: "armada"}, Namespace: &ns,
	}
	if diff := cmp.Diff(wantSel, rsp.GetRequirements().GetResources()[targetRequirement], protocmp.Transform()); diff != "" {
		t.Errorf("target requirement: -want, +got:\n%s", diff)
	}

	// The target, and the job namespace and Queue names, free.
	req.RequiredResources = map[string]*fnv1.Resources{
		targetRequirement:        {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(namespacedXR)}}},
		"namespace-team-ml-jobs": {}, queueRequirement: {},
	}
	req = withPolicies(req, testPolicies...)
	rsp, err = runFunction(t, newFunction(t), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("refused: %s", r.GetMessage())
		}
	}
	type obj struct{ Key, Kind, Namespace, Name, Manifest, ManifestNamespace, ProviderConfig string }
	got := make([]obj, 0, len(rsp.GetDesired().GetResources()))
	for key, r := range rsp.GetDesired().GetResources() {
		u := r.GetResource().AsMap()
		m := u["spec"].(map[string]any)["forProvider"].(map[string]any)["manifest"].(map[string]any)
		mm := m["metadata"].(map[string]any)
		mns, _ := mm["namespace"].(string)
		got = append(got, obj{
			Key: key, Kind: u["kind"].(string), Namespace: u["metadata"].(map[string]any)["namespace"].(string), Name: u["metadata"].(map[string]any)["name"].(string),
			Manifest: m["kind"].(string), ManifestNamespace: mns,
			ProviderConfig: u["spec"].(map[string]any)["providerConfigRef"].(map[string]any)["name"].(string),
		})
	}
	want := []obj{
		{Key: "namespace-team-ml-jobs", Kind: "Object", Namespace: "team-ml", Name: "ml-namespace-team-ml-jobs", Manifest: "Namespace", ProviderConfig: "in-cluster"},
		{Key: "namespace-team-ml-jobs-serviceaccount", Kind: "Object", Namespace: "team-ml", Name: "ml-namespace-team-ml-jobs-serviceaccount", Manifest: "ServiceAccount", ManifestNamespace: "team-ml-jobs", ProviderConfig: "in-cluster"},
		{Key: "namespace-team-ml-jobs-binoculars-jobs", Kind: "Object", Namespace: "team-ml", Name: "ml-namespace-team-ml-jobs-binoculars-jobs", Manifest: "RoleBinding", ManifestNamespace: "team-ml-jobs", ProviderConfig: "in-cluster"},
		{Key: "namespace-team-ml-jobs-executor-local-jobs", Kind: "Object", Namespace: "team-ml", Name: "ml-namespace-team-ml-jobs-executor-local-jobs", Manifest: "RoleBinding", ManifestNamespace: "team-ml-jobs", ProviderConfig: "in-cluster"},
		{Key: "queue", Kind: "Object", Namespace: "team-ml", Name: "ml-queue", Manifest: "Queue", ManifestNamespace: "team-a", ProviderConfig: "in-cluster"},
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b obj) bool { return a.Key < b.Key })); diff != "" {
		t.Errorf("desired: -want, +got:\n%s", diff)
	}
}
