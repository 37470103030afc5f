package function

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

const validXR = `{
	"apiVersion": "platform.armadaproject.io/v1alpha1",
	"kind": "XArmada",
	"metadata": {"name": "armada-x1", "labels": {"crossplane.io/claim-name": "armada", "crossplane.io/claim-namespace": "armada"}},
	"spec": {
		"postgres": {"host": "pg", "user": "armada", "passwordSecretRef": {"name": "pg", "key": "password"}},
		"redis": {"addrs": ["redis:6379"]},
		"pulsar": {"url": "pulsar://pulsar:6650", "adminURL": "http://pulsar:8080"},
		"auth": {"basicUsers": [{"name": "admin", "groups": ["armada-admins"]}]}
	}
}`

func newFunction(t testing.TB) *Function {
	t.Helper()
	f, err := New(logging.NewNopLogger(), WithPasswordKey([]byte("test")))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func requestFor(xr string) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "hello"},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}},
	}
}

func TestRunFunctionRejects(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     string
		want   string
	}{
		"WrongType": {
			reason: "A field of the wrong type is a Fatal result naming the field.",
			xr:     strings.Replace(validXR, `"host": "pg"`, `"host": 5`, 1),
			want:   "invalid XArmada: spec.postgres.host: Invalid value: must be of type string, not number",
		},
		"DuplicatePool": {
			reason: "Validation errors are a Fatal result naming every bad field.",
			xr:     strings.Replace(validXR, `"auth"`, `"scheduling": {"pools": [{"name": "a"}, {"name": "a"}]}, "auth"`, 1),
			want:   `invalid XArmada: spec.scheduling.pools[1].name: Duplicate value: "a"`,
		},
		"SeveralErrors": {
			reason: "Every bad field is named, not only the first.",
			xr:     strings.Replace(validXR, `"auth"`, `"executors": [{"clusterId": "c1", "pool": "gpu"}], "version": "0.1.0", "auth"`, 1),
			want:   `invalid XArmada: [spec.version: Unsupported value: "0.1.0": supported values: "0.22.6", "0.22.7", "0.22.8", spec.executors[0].pool: Invalid value: "gpu": must name one of spec.scheduling.pools, or the scheduler never schedules onto this executor]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := runFunction(t, newFunction(t), requestFor(tc.xr))
			if diff := cmp.Diff(nil, err, cmpopts.EquateErrors()); diff != "" {
				t.Fatalf("%s\nRunFunction(...): -want err, +got err:\n%s", tc.reason, diff)
			}
			want := &fnv1.RunFunctionResponse{
				Meta:    &fnv1.ResponseMeta{Tag: "hello", Ttl: durationpb.New(response.DefaultTTL)},
				Results: []*fnv1.Result{{Severity: fnv1.Severity_SEVERITY_FATAL, Message: tc.want, Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()}},
			}
			// The Accepted condition is checked separately below.
			got := &fnv1.RunFunctionResponse{Meta: rsp.GetMeta(), Results: rsp.GetResults(), Desired: rsp.GetDesired()}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want rsp, +got rsp:\n%s", tc.reason, diff)
			}
		})
	}
}

// ownedPriorityClass is a required PriorityClass another XArmada composes.
func ownedPriorityClass(name string) map[string]*fnv1.Resources {
	return map[string]*fnv1.Resources{
		"priorityclass-" + name: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{
			"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": {"name": "` + name + `", "labels": {"crossplane.io/composite": "another-armada"}}, "value": 1000}`)}}},
	}
}

// platformPriorityClass is a required PriorityClass nothing composed.
func platformPriorityClass(name string) map[string]*fnv1.Resources {
	return map[string]*fnv1.Resources{
		"priorityclass-" + name: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{
			"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": {"name": "` + name + `"}, "value": 1000000}`)}}},
	}
}

// markedPriorityClass is a required PriorityClass carrying an ownership
// mark.
func markedPriorityClass(name, mark string) map[string]*fnv1.Resources {
	return map[string]*fnv1.Resources{
		"priorityclass-" + name: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{
			"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": {"name": "` + name + `", "annotations": {"armadaproject.io/owner": "` + mark + `"}}, "value": 1000}`)}}},
	}
}

// withExplicitPriorityClass gives the XR one priority class named shared.
func withExplicitPriorityClass(xr string) string {
	return strings.Replace(xr, `"auth"`, `"scheduling": {"priorityClasses": [{"name": "shared", "priority": 1000}]}, "auth"`, 1)
}

func TestRunFunctionAcceptedCondition(t *testing.T) {
	cases := map[string]struct {
		reason   string
		xr       string
		required map[string]*fnv1.Resources
		want     *fnv1.Condition
	}{
		"InvalidSpec": {
			reason: "An invalid spec is refused on the claim, naming the field and what to do.",
			xr:     strings.Replace(validXR, `"auth": {"basicUsers": [{"name": "admin", "groups": ["armada-admins"]}]}`, `"auth": {}`, 1),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: ReasonRefused,
				Message: ptrTo("invalid XArmada: spec.auth: Required value: configure basicUsers or oidc, or set anonymous: true explicitly"),
				Target:  fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"PriorityClassOwnedElsewhere": {
			reason:   "A name another Armada owns is refused on the claim too, not only on the cluster-scoped XR.",
			xr:       withExplicitPriorityClass(validXR),
			required: ownedPriorityClass("shared"),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: ReasonRefused,
				Message: ptrTo(`invalid XArmada: spec.scheduling.priorityClasses[0].name: Invalid value: "shared": PriorityClass shared ` +
					`already belongs to composite resource another-armada; PriorityClasses are cluster-wide, so choose names no other Armada in this cluster uses`),
				Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"PriorityClassExistsUnmarked": {
			reason:   "A PriorityClass that exists without this Armada's mark (the platform's) is refused, not adopted.",
			xr:       withExplicitPriorityClass(validXR),
			required: platformPriorityClass("shared"),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: ReasonRefused,
				Message: ptrTo(`invalid XArmada: spec.scheduling.priorityClasses[0].name: Invalid value: "shared": PriorityClass shared ` +
					`already exists and was not created by this Armada; it is not adopted: choose another name, ` +
					`or leave spec.scheduling.priorityClasses unset for names of this Armada's own`),
				Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"PriorityClassMarked": {
			reason:   "A PriorityClass carrying this claim's mark is its own.",
			xr:       withExplicitPriorityClass(validXR),
			required: markedPriorityClass("shared", "ArmadaClaim armada/armada"),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: ReasonAccepted,
				Message: ptrTo("The spec is valid and every name it composes is free"),
				Target:  fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"ClaimNamespaceElsewhere": {
			reason: "A claim composes into its own namespace only.",
			xr:     strings.Replace(validXR, `"auth"`, `"namespace": "victim", "auth"`, 1),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: ReasonRefused,
				Message: ptrTo("invalid XArmada: spec.namespace: Forbidden: a claim composes only into its own namespace (armada), not victim; " +
					"remove spec.namespace, or apply the claim in namespace victim if you may"),
				Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"IngressServesComposedSecret": {
			reason: "A Secret the function composes is not a tenant's input.",
			xr: strings.Replace(validXR, `"auth"`, `"ingress": {"grpcHost": "g.example.com", "restHost": "r.example.com", `+
				`"lookoutHost": "l.example.com", "tlsSecretName": "armada-tls"}, "auth"`, 1),
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: ReasonRefused,
				Message: ptrTo(`invalid XArmada: spec.ingress.tlsSecretName: Invalid value: "armada-tls": names the Secret the function ` +
					`composes with the private CA's key and the TLS keys; name a Secret of your own in namespace armada`),
				Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
		"Accepted": {
			reason: "An accepted XR says so, so a fixed claim loses its earlier refusal.",
			xr:     validXR,
			want: &fnv1.Condition{
				Type: ConditionAccepted, Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: ReasonAccepted,
				Message: ptrTo("The spec is valid and every name it composes is free"),
				Target:  fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := requestFor(tc.xr)
			req.RequiredResources = tc.required
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, conditionOf(rsp, ConditionAccepted), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nAccepted condition: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// conditionOf is the response's condition of type typ, nil if it has none.
func conditionOf(rsp *fnv1.RunFunctionResponse, typ string) *fnv1.Condition {
	var got *fnv1.Condition
	for _, c := range rsp.GetConditions() {
		if c.GetType() == typ {
			got = c
		}
	}
	return got
}

// refusalOf is the message of the response's Accepted=False condition, ""
// if the function accepted the XR.
func refusalOf(rsp *fnv1.RunFunctionResponse) string {
	if c := conditionOf(rsp, ConditionAccepted); c.GetStatus() == fnv1.Status_STATUS_CONDITION_FALSE {
		return c.GetMessage()
	}
	return ""
}

// requiredPriorityClasses are the PriorityClasses the function asks for.
func requiredPriorityClasses(rsp *fnv1.RunFunctionResponse) []string {
	names := make([]string, 0, len(rsp.GetRequirements().GetResources()))
	for key, sel := range rsp.GetRequirements().GetResources() {
		if !strings.HasPrefix(key, priorityClassRequirement) {
			continue
		}
		names = append(names, sel.GetMatchName())
	}
	sort.Strings(names)
	return names
}

func TestRunFunctionPriorityClassNames(t *testing.T) {
	legacy := []string{"armada-default", "armada-preemptible"}
	perArmada := []string{"armada-armada-0abc57-default", "armada-armada-0abc57-preemptible"}
	observedLegacy := &fnv1.State{Resources: map[string]*fnv1.Resource{
		"priorityclass-armada-default": {Resource: resource.MustStructJSON(`{
			"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "armada-default", "labels": {"crossplane.io/composite": "armada-x1"}}, "value": 1000}`)},
	}}
	cases := map[string]struct {
		reason   string
		xr       string
		observed *fnv1.State
		want     []string
	}{
		"NewArmada": {
			reason: "A new Armada's default classes carry its namespace, name and a hash of both, so two Armadas never share them.",
			xr:     validXR,
			want:   perArmada,
		},
		"OtherNamespace": {
			reason: "The same claim name in another namespace gets other names.",
			xr:     strings.Replace(validXR, `"crossplane.io/claim-namespace": "armada"`, `"crossplane.io/claim-namespace": "team-a"`, 1),
			want:   []string{"team-a-armada-9fb331-default", "team-a-armada-9fb331-preemptible"},
		},
		"ExistingArmadaByReference": {
			reason: "An Armada whose resource references name the legacy classes keeps them: running jobs use them.",
			xr: strings.Replace(validXR, `"postgres"`,
				`"resourceRefs": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "name": "armada-preemptible"}], "postgres"`, 1),
			want: legacy,
		},
		"ExistingArmadaObserved": {
			reason:   "An Armada observed composing the legacy classes keeps them.",
			xr:       validXR,
			observed: observedLegacy,
			want:     legacy,
		},
		"Explicit": {
			reason: "Names the user gives are used as given.",
			xr:     withExplicitPriorityClass(validXR),
			want:   []string{"shared"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := requestFor(tc.xr)
			if tc.observed != nil {
				tc.observed.Composite = req.GetObserved().GetComposite()
				req.Observed = tc.observed
			}
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rsp.GetResults()) != 0 {
				t.Fatalf("RunFunction(...) results: %v", rsp.GetResults())
			}
			if diff := cmp.Diff(tc.want, requiredPriorityClasses(rsp)); diff != "" {
				t.Errorf("%s\nrequired PriorityClasses: -want, +got:\n%s", tc.reason, diff)
			}
			var composed []string
			for _, r := range rsp.GetDesired().GetResources() {
				if r.GetResource().GetFields()["kind"].GetStringValue() == "PriorityClass" {
					composed = append(composed, r.GetResource().GetFields()["metadata"].GetStructValue().GetFields()["name"].GetStringValue())
				}
			}
			sort.Strings(composed)
			if diff := cmp.Diff(tc.want, composed); diff != "" {
				t.Errorf("%s\ncomposed PriorityClasses: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRunFunctionComposes(t *testing.T) {
	req := requestFor(validXR)
	// Desired state from an earlier pipeline step must be kept.
	req.Desired = &fnv1.State{Resources: map[string]*fnv1.Resource{
		"earlier-step": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`)},
	}}
	rsp, err := runFunction(t, newFunction(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetResults()) != 0 {
		t.Fatalf("RunFunction(...) results: %v", rsp.GetResults())
	}
	keys := make([]string, 0, len(rsp.GetDesired().GetResources()))
	for k := range rsp.GetDesired().GetResources() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{
		"binoculars-config", "binoculars-pdb", "binoculars-service", "binoculars-serviceaccount", "binoculars-workload",
		"credentials", "earlier-step",
		"event-ingester-config", "event-ingester-pdb", "event-ingester-service", "event-ingester-serviceaccount",
		"executor-local-clusterrolebinding", "executor-local-config", "executor-local-service", "executor-local-serviceaccount", "executor-local-workload",
		// The job namespace first: what lives in it follows once it is observed (NamespacesFirst).
		"jobnamespace-armada-jobs",
		"jobs-admissionpolicy", "jobs-admissionpolicybinding",
		"lookout-config", "lookout-ingester-config", "lookout-ingester-pdb", "lookout-ingester-service", "lookout-ingester-serviceaccount", "lookout-pdb", "lookout-service", "lookout-serviceaccount",
		"migrate-lookout-0-22-8-894802", "migrate-lookout-config", "migrate-scheduler-0-22-8-ee1a3d", "migrate-scheduler-config",
		"netpol-binoculars", "netpol-default-deny", "netpol-event-ingester", "netpol-executor-local", "netpol-lookout",
		"netpol-lookout-ingester", "netpol-migrate-lookout", "netpol-migrate-scheduler", "netpol-prune-lookout", "netpol-prune-scheduler", "netpol-pulsar-topics",
		"netpol-scheduler", "netpol-scheduler-ingester", "netpol-server",
		"priorityclass-armada-armada-0abc57-default", "priorityclass-armada-armada-0abc57-preemptible", "pulsar-topics",
		"scheduler-config", "scheduler-headless", "scheduler-ingester-config", "scheduler-ingester-pdb", "scheduler-ingester-service", "scheduler-ingester-serviceaccount",
		"scheduler-pdb", "scheduler-service", "scheduler-serviceaccount",
		"server-config", "server-pdb", "server-service", "server-serviceaccount",
		"tls",
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("desired resources on first reconcile: -want, +got:\n%s", diff)
	}
	if got := rsp.GetMeta().GetTtl().AsDuration(); got != progressTTL {
		t.Errorf("response TTL = %s, want %s while Armada converges", got, progressTTL)
	}
	if got := rsp.GetDesired().GetComposite().GetReady(); got != fnv1.Ready_READY_FALSE {
		t.Errorf("desired XR readiness = %v, want READY_FALSE while components wait", got)
	}
	status := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
	wantStatus := map[string]any{"version": map[string]any{"desired": "0.22.8"}, "credentialsSecret": "armada-credentials"}
	if diff := cmp.Diff(wantStatus["version"], status["version"]); diff != "" {
		t.Errorf("status.version: -want, +got:\n%s", diff)
	}
	if status["credentialsSecret"] != wantStatus["credentialsSecret"] {
		t.Errorf("status.credentialsSecret = %v", status["credentialsSecret"])
	}
	if strings.Contains(structJSON(t, rsp.GetDesired().GetComposite().GetResource()), "password\":\"") {
		t.Errorf("XR status contains a password")
	}
}

func structJSON(t *testing.T, s *structpb.Struct) string {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exampleRequest builds a request for the XR of an example claim.
func exampleRequest(tb testing.TB, path string) *fnv1.RunFunctionRequest {
	tb.Helper()
	docs, err := manifest.ReadDocs(path)
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range docs {
		switch m["kind"] {
		case "ArmadaClaim":
			meta := m["metadata"].(map[string]any)
			m["kind"] = "XArmada"
			m["metadata"] = map[string]any{"name": meta["name"], "labels": map[string]any{
				"crossplane.io/claim-name": meta["name"], "crossplane.io/claim-namespace": meta["namespace"],
			}}
		case "Armada": // a namespaced Armada is its own XR
		default:
			continue
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			tb.Fatal(err)
		}
		return &fnv1.RunFunctionRequest{
			Meta: &fnv1.RequestMeta{Tag: "bench"}, Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}},
			RequiredResources: map[string]*fnv1.Resources{tenancyRequirementNamespace: examplePolicies(tb)},
		}
	}
	tb.Fatalf("no ArmadaClaim or Armada in %s", path)
	return nil
}

// isArmadaExample says whether an example file holds an ArmadaClaim or a
// namespaced Armada (not only a team queue, which needs a target).
func isArmadaExample(b []byte) bool {
	return strings.Contains(string(b), "\nkind: ArmadaClaim\n") || strings.Contains(string(b), "\nkind: Armada\n")
}

// runFunction calls f.RunFunction and returns its response as Crossplane
// reads it, encoded and decoded: the function writes the composed
// objects' Structs encoded (structenc.EncodedStruct), so only the decoded
// response holds their fields.
func runFunction(tb testing.TB, f *Function, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	tb.Helper()
	rsp, err := f.RunFunction(context.Background(), req)
	if err != nil {
		return rsp, err
	}
	return decodedResponse(tb, rsp), nil
}

// decodedResponse is rsp encoded and decoded.
func decodedResponse(tb testing.TB, rsp *fnv1.RunFunctionResponse) *fnv1.RunFunctionResponse {
	tb.Helper()
	b, err := proto.Marshal(rsp)
	if err != nil {
		tb.Fatal(err)
	}
	out := &fnv1.RunFunctionResponse{}
	if err := proto.Unmarshal(b, out); err != nil {
		tb.Fatal(err)
	}
	return out
}
