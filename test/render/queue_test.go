package render

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

const (
	queueComposition = root + "/package/xarmada/queue-composition.yaml"
	queueXRD         = root + "/package/xarmada/queue-definition.yaml"
)

// TestRenderTeamQueue renders examples/team-queue.yaml through the real
// Crossplane CLI and core with the production example's XArmada as the
// required target, compares it with a golden file and validates it against
// the queue XRD and provider-armada's CRDs; without the target, the render
// fails naming spec.armada.name.
func TestRenderTeamQueue(t *testing.T) {
	tools, addr := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, err := yaml.Marshal(exampleXR(t, "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	required := withPolicies(t, target)
	opt := xprender.RenderOptions{XR: exampleXR(t, "team-queue.yaml"), Composition: queueComposition, XRD: queueXRD, FunctionAddress: addr, RequiredResources: required}
	out, err := tools.Render(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "team-queue", "team-queue.yaml"), out)
	again, err := tools.Render(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Error("rendering the same team queue twice differs")
	}
	crds, err := thirdparty.CRDDirs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := tools.Validate(ctx, append([]string{queueXRD, providerCRDs}, crds...), "-", withoutResults(t, out)); err != nil {
		t.Errorf("team queue render does not validate: %v", err)
	} else {
		t.Logf("validate: %s", lastLine(v))
	}

	// The team's policy lets it attach to the Armada, which is missing.
	opt.RequiredResources = withPolicies(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: x}\n"))
	if _, err := tools.Render(ctx, opt); err == nil || !strings.Contains(err.Error(), `spec.armada.name: Not found: no ArmadaClaim "armada" in namespace "armada-prod"`) {
		t.Errorf("rendering without the target Armada: got %v, want a Fatal naming spec.armada.name", err)
	}
}

// TestRenderNamespacedTeamQueue renders examples/namespaced-queue.yaml, a
// namespaced ArmadaQueue, through the real Crossplane CLI and core with
// examples/namespaced.yaml's Armada as the required target: everything it
// composes is in its own namespace (the Queue beside the Armada and the
// jobs' namespace inside provider-kubernetes Objects). It compares the
// render with a golden file and validates it, wrapped manifests included.
func TestRenderNamespacedTeamQueue(t *testing.T) {
	tools, addr := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target := exampleXR(t, "namespaced.yaml")
	b, err := yaml.Marshal(target)
	if err != nil {
		t.Fatal(err)
	}
	required := withPolicies(t, b)
	xrd := root + "/package/xarmada/namespaced-queue-definition.yaml"
	queue := exampleXR(t, "namespaced-queue.yaml")
	opt := xprender.RenderOptions{
		XR: queue, Composition: root + "/package/xarmada/namespaced-queue-composition.yaml", XRD: xrd,
		FunctionAddress: addr, RequiredResources: required,
	}
	out, err := tools.Render(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "team-queue", "namespaced-queue.yaml"), out)
	again, err := tools.Render(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Error("rendering the same namespaced team queue twice differs")
	}
	queue["spec"].(map[string]any)["clusterScope"] = target["spec"].(map[string]any)["clusterScope"]
	checkScope(t, out, queue)
	crds, err := thirdparty.CRDDirs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := withManifests(withoutResults(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := tools.Validate(ctx, append([]string{xrd, providerCRDs}, crds...), "-", resources); err != nil {
		t.Errorf("namespaced team queue render does not validate: %v", err)
	} else {
		t.Logf("validate: %s", lastLine(v))
	}
}

// withPolicies writes a required-resources file of the target Armada and
// the examples' tenancy policies, and returns its path.
func withPolicies(t *testing.T, target []byte) string {
	t.Helper()
	policies, err := os.ReadFile(tenancyPolicies)
	if err != nil {
		t.Fatal(err)
	}
	required := filepath.Join(t.TempDir(), "required.yaml")
	if err := os.WriteFile(required, append(append(target, "\n---\n"...), policies...), 0o600); err != nil {
		t.Fatal(err)
	}
	return required
}

// exampleXR is the XR of an example: its claim's, or the namespaced XR
// itself.
func exampleXR(t *testing.T, example string) map[string]any {
	t.Helper()
	docs, err := manifest.ReadDocs(testutil.Example(example))
	if err != nil {
		t.Fatal(err)
	}
	xr, err := xprender.ClaimToXR(docs)
	if err != nil {
		t.Fatal(err)
	}
	return xr
}
