package armada

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAdmissionPolicies checks that each cluster with an executor gets the
// Armada's admission policy and its binding, matching exactly the
// executors there, each rule Forbidden and named in its message. The CEL
// itself is the API server's to judge: TestAdmissionPolicy
// (internal/harness/controlplane) runs it.
func TestAdmissionPolicies(t *testing.T) {
	_, out := renderCase(t, 0, claimed(remoteSpec()), Options{Rand: KeyedRand([]byte("k"), "xr")})
	type policy struct {
		Users  string
		Rules  []string
		Binds  string
		Denies []admissionv1.ValidationAction
	}
	got := map[string]*policy{}
	at := func(cluster string) *policy {
		if got[cluster] == nil {
			got[cluster] = &policy{}
		}
		return got[cluster]
	}
	for _, o := range out.Objects {
		cluster, m := "", toJSONMap(o.Object)
		if u, ok := o.Object.(*unstructured.Unstructured); ok && u.GetKind() == "Object" {
			cluster, _, _ = unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
			m, _, _ = unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
		}
		switch m["kind"] {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p); err != nil {
				t.Fatal(err)
			}
			if p.Name != "armada.armada.jobs.armadaproject.io" || p.Annotations[AnnotationOwner] != "ArmadaClaim armada/armada" {
				t.Errorf("cluster %q: policy %s marked %q; want armada.armada.jobs.armadaproject.io marked for the claim", cluster, p.Name, p.Annotations[AnnotationOwner])
			}
			at(cluster).Users = p.Spec.MatchConditions[0].Expression
			for _, v := range p.Spec.Validations {
				if v.Reason == nil || *v.Reason != "Forbidden" {
					t.Errorf("cluster %q: rule %q is not Forbidden: Armada's executor retries other refusals", cluster, v.Message)
				}
				rule, _, _ := strings.Cut(strings.TrimPrefix(v.Message, "rule "), ":")
				at(cluster).Rules = append(at(cluster).Rules, rule)
			}
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &b); err != nil {
				t.Fatal(err)
			}
			at(cluster).Binds, at(cluster).Denies = b.Spec.PolicyName, b.Spec.ValidationActions
		}
	}
	rules := []string{RuleJobNamespace, RuleServiceAccount, RuleServiceAccountToken, RuleComposedSecrets, RuleComponentLabels}
	deny := []admissionv1.ValidationAction{admissionv1.Deny}
	name := "armada.armada.jobs.armadaproject.io"
	want := map[string]*policy{
		"": {Users: `request.userInfo.username in ["system:serviceaccount:armada:armada-executor-here"]`, Rules: rules, Binds: name, Denies: deny},
		"worker-a": {
			Users: `request.userInfo.username in ["system:serviceaccount:armada:armada-executor-a"]`, Rules: rules, Binds: name, Denies: deny,
		},
		"worker-g": {
			Users: `request.userInfo.username in ["system:serviceaccount:armada:armada-executor-g"]`, Rules: rules, Binds: name, Denies: deny,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admission policies by cluster: -want, +got:\n%s", diff)
	}
}
