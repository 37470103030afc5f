package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestNetworkPoliciesAdmitted renders every example claim and has the real
// kube-apiserver admit each composed NetworkPolicy (a server-side dry-run
// create), which validates what the offline schema cannot: port names,
// protocols, selectors. TestExamples applies three examples through
// Crossplane and checks their policies exist.
func TestNetworkPoliciesAdmitted(t *testing.T) {
	const ns = "e2e-netpol"
	namespace(t, ns)
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	claims := 0
	for _, path := range paths {
		docs, err := manifest.ReadDocs(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if d["kind"] != "ArmadaClaim" {
				continue
			}
			claims++
			b, err := json.Marshal(d["spec"])
			if err != nil {
				t.Fatal(err)
			}
			var spec v1alpha1.ArmadaSpec
			if err := json.Unmarshal(b, &spec); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			in, errs := armada.New(armada.XR{Name: "armada-np", Labels: map[string]string{
				"crossplane.io/claim-name": "armada", "crossplane.io/claim-namespace": ns,
			}, Spec: spec})
			if len(errs) > 0 {
				t.Fatalf("%s: %v", path, errs)
			}
			out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("e2e"), "xr")})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			admitted := 0
			for _, o := range out.Objects {
				np, ok := o.Object.(*networkingv1.NetworkPolicy)
				if !ok {
					continue
				}
				np = np.DeepCopy()
				np.Namespace = ns
				if err := kube().Create(context.Background(), np, client.DryRunAll); err != nil {
					t.Errorf("%s: the API server refused NetworkPolicy %s: %v", path, np.Name, err)
					continue
				}
				admitted++
			}
			if admitted == 0 {
				t.Errorf("%s: no NetworkPolicy admitted", path)
			}
			t.Logf("%s: %d NetworkPolicies admitted", filepath.Base(path), admitted)
		}
	}
	if claims < 8 {
		t.Errorf("only %d example claims", claims)
	}
}
