package armada

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestComposedNamesFit renders the longest names New accepts, a 30-character
// claim name with a clusterId at its composed limit, with every backing
// service in-cluster and the longest queue name, and checks each composed object against Kubernetes'
// name limits: a Service name is a DNS label (63), an RBAC name a path
// segment, every other name a DNS subdomain (253), every label value at
// most 63 characters.
func TestComposedNamesFit(t *testing.T) {
	name := strings.Repeat("a", maxNameLength)
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Postgres = v1alpha1.Postgres{Mode: modeInCluster}
		s.Redis = v1alpha1.Redis{Mode: modeInCluster}
		s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster}
		s.Executors = []v1alpha1.Executor{{ClusterID: strings.Repeat("c", validation.DNS1035LabelMaxLength-len(name+"-executor-"))}}
		s.Queues = []v1alpha1.ArmadaQueue{{Name: strings.Repeat("q", 63)}}
		s.Queues[0].PriorityFactor = "1"
	})
	in, errs := New(XR{Name: "x", Labels: map[string]string{xcrd.LabelKeyClaimName: name, xcrd.LabelKeyClaimNamespace: "armada"}, Spec: s})
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	out, err := Render(in, Options{Observed: Observed{Jobs: migrated(t, s)}, Rand: KeyedRand([]byte("k"), "xr")})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	for _, o := range out.Objects {
		n := o.Object.GetName()
		check := validation.IsDNS1123Subdomain
		switch o.Object.(type) {
		case *corev1.Service:
			check = validation.IsDNS1035Label
		case *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			// RBAC names are path segments: any characters but "/" and "%".
			check = func(n string) []string {
				if len(n) > validation.DNS1123SubdomainMaxLength || strings.ContainsAny(n, "/%") {
					return []string{"must be a path segment of at most 253 characters"}
				}
				return nil
			}
		}
		for _, msg := range check(n) {
			t.Errorf("%s: name %q (%d characters): %s", o.Key, n, len(n), msg)
		}
		for k, v := range o.Object.GetLabels() {
			for _, msg := range validation.IsValidLabelValue(v) {
				t.Errorf("%s: label %s=%q: %s", o.Key, k, v, msg)
			}
		}
	}
}
