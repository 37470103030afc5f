// Package render proves, with the real Crossplane CLI and core, what
// function-armada composes for every example claim.
package render

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// tenancyPolicies are the platform's policies the examples run under,
// passed as required resources (Crossplane fetches them on a cluster).
var tenancyPolicies = testutil.Example("tenancy-policy.yaml")

const (
	root        = "../.."
	composition = root + "/package/xarmada/composition.yaml"
	xrd         = root + "/package/xarmada/definition.yaml"
	// The namespaced Armada's.
	nsComposition = root + "/package/xarmada/namespaced-composition.yaml"
	nsXRD         = root + "/package/xarmada/namespaced-definition.yaml"
	// provider-armada's CRDs, for the Queues and ProviderConfig composed.
	providerCRDs = root + "/package/provider/crds"
	// maxSteps bounds how many reconciles an example may take to converge.
	maxSteps = 5
)

// setup serves function-armada with a fixed password key, so renders are
// reproducible, and finds the Crossplane binaries.
func setup(t *testing.T) (xprender.Tools, string) {
	t.Helper()
	return xprender.ServeForTest(t, "render-test-key")
}

func examples(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("cannot find examples: %v", err)
	}
	var out []string
	for _, p := range paths {
		docs, err := manifest.ReadDocs(p)
		if err != nil {
			t.Fatal(err)
		}
		if xr, err := xprender.ClaimToXR(docs); err == nil && (xr["kind"] == "XArmada" || xr["kind"] == "Armada") {
			out = append(out, p)
		}
	}
	return out
}

// TestRender converges every example claim, and every namespaced Armada,
// through real renders and compares the first reconcile and the converged
// state with golden files, then validates the converged output against the
// generated XRD offline.
func TestRender(t *testing.T) {
	tools, addr := setup(t)
	crds, err := thirdparty.CRDDirs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	crds = append(crds, providerCRDs)
	for _, path := range examples(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			xr := exampleXR(t, filepath.Base(path))
			opt := xprender.RenderOptions{XR: xr, Composition: composition, XRD: xrd, FunctionAddress: addr, RequiredResources: tenancyPolicies}
			if xr["kind"] == "Armada" {
				opt.Composition, opt.XRD = nsComposition, nsXRD
			}
			converge(t, tools, crds, opt, filepath.Join("testdata", "first-reconcile", name+".yaml"), filepath.Join("testdata", name+".yaml"))
		})
	}
	// The in-cluster example with Redis Sentinel, in a directory of its
	// own: the conformance suite, which runs testdata/*.yaml, serves one
	// plain Redis (internal/harness/testenv's TestRedisSentinelFailover runs the
	// composed Sentinel Redis).
	t.Run("redis-sentinel", func(t *testing.T) {
		xr := exampleXR(t, "all-in-cluster.yaml")
		spec, _ := xr["spec"].(map[string]any)
		spec["redis"] = map[string]any{"mode": "InCluster", "inCluster": map[string]any{"sentinel": map[string]any{}}}
		converge(t, tools, crds, xprender.RenderOptions{XR: xr, Composition: composition, XRD: xrd, FunctionAddress: addr, RequiredResources: tenancyPolicies},
			"", filepath.Join("testdata", "variants", "redis-sentinel.yaml"))
	})
	// Every other supported release on the minimal example, for the
	// conformance test to run with that release's binaries.
	for _, v := range armada.SupportedVersions {
		if v == armada.DefaultVersion {
			continue
		}
		t.Run("minimal-"+v, func(t *testing.T) {
			xr := exampleXR(t, "minimal.yaml")
			spec, _ := xr["spec"].(map[string]any)
			spec["version"] = v
			converge(t, tools, crds, xprender.RenderOptions{XR: xr, Composition: composition, XRD: xrd, FunctionAddress: addr},
				"", filepath.Join("testdata", "versions", "minimal-"+v+".yaml"))
		})
	}
}

// converge renders an XR until it converges and compares the first
// reconcile (unless first is empty) and the converged state with golden
// files, checks a repeated render is identical, then validates the
// converged output against the generated XRD offline.
func converge(t *testing.T, tools xprender.Tools, crds []string, opt xprender.RenderOptions, first, final string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	steps, err := tools.Converge(ctx, opt, maxSteps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converged in %d reconciles", len(steps))
	if first != "" {
		golden(t, first, steps[0].Output)
	}
	out := steps[len(steps)-1].Output
	golden(t, final, out)

	again, err := tools.Render(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(steps[0].Output), string(again)); diff != "" {
		t.Errorf("rendering the same request twice differs (-first +second):\n%s", diff)
	}

	if opt.XR["kind"] == "Armada" {
		checkScope(t, out, opt.XR)
	}

	resources, err := withManifests(withoutResults(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tools.Validate(ctx, append([]string{opt.XRD}, crds...), "-", resources); err != nil {
		t.Errorf("converged output does not validate: %v", err)
	} else {
		t.Logf("validate: %s", lastLine(out))
	}
}

// golden compares got with a golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read golden file (run go test ./test/render -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the render (-want +got); run go test ./test/render -update if the change is intended:\n%s", path, diff)
	}
}

// withoutResults drops render's Result documents, which have no schema.
func withoutResults(t *testing.T, out []byte) []byte {
	t.Helper()
	docs, err := manifest.Documents(out)
	if err != nil {
		t.Fatal(err)
	}
	var keep [][]byte
	for _, doc := range docs {
		if !bytes.Contains(doc, []byte("apiVersion: render.crossplane.io/")) {
			keep = append(keep, doc)
		}
	}
	return manifest.Join(keep)
}

// withManifests appends the manifest every provider-kubernetes Object
// wraps, so the wrapped objects (the CloudNativePG Cluster) are validated
// against their own CRDs too.
func withManifests(out []byte) ([]byte, error) {
	docs, err := manifest.Documents(out)
	if err != nil {
		return nil, err
	}
	all := slices.Clone(docs)
	for _, doc := range docs {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				ForProvider struct {
					Manifest map[string]any `json:"manifest"`
				} `json:"forProvider"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, err
		}
		if o.Kind != "Object" || !strings.HasPrefix(o.APIVersion, "kubernetes.m.crossplane.io/") {
			continue
		}
		b, err := yaml.Marshal(o.Spec.ForProvider.Manifest)
		if err != nil {
			return nil, err
		}
		all = append(all, b)
	}
	return manifest.Join(all), nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// clusterScoped are the kinds function-armada composes that have no
// namespace.
var clusterScoped = map[string]bool{"PriorityClass": true, "ClusterRole": true, "ClusterRoleBinding": true, "Namespace": true}

// checkScope asserts the scope rules of a namespaced XR's render: every
// composed resource is in the XR's namespace and none is cluster-scoped;
// cluster-scoped objects appear only inside provider-kubernetes Objects,
// for the config spec.clusterScope names.
func checkScope(t *testing.T, out []byte, xr map[string]any) {
	t.Helper()
	docs, err := manifest.Split(withoutResults(t, out))
	if err != nil {
		t.Fatal(err)
	}
	ns := xr["metadata"].(map[string]any)["namespace"]
	want, _ := xr["spec"].(map[string]any)["clusterScope"].(map[string]any)["providerConfigRef"].(map[string]any)
	wrapped := 0
	for _, d := range xprender.Composed(docs) {
		meta, _ := d["metadata"].(map[string]any)
		if clusterScoped[fmt.Sprint(d["kind"])] || meta["namespace"] != ns {
			t.Errorf("%s %v is composed directly (namespace %v): a namespaced XR composes only namespaced kinds, in its namespace %v",
				d["kind"], meta["name"], meta["namespace"], ns)
		}
		if d["kind"] != "Object" {
			continue
		}
		spec, _ := d["spec"].(map[string]any)
		m, _ := spec["forProvider"].(map[string]any)["manifest"].(map[string]any)
		if !clusterScoped[fmt.Sprint(m["kind"])] {
			continue
		}
		wrapped++
		if got := spec["providerConfigRef"]; !cmp.Equal(got, any(want)) {
			t.Errorf("Object %v carries a %v for %v, want spec.clusterScope's %v", meta["name"], m["kind"], got, want)
		}
	}
	if wrapped == 0 {
		t.Error("no cluster-scoped object composed through a provider-kubernetes Object")
	}
	t.Logf("%d cluster-scoped objects composed through provider-kubernetes Objects in %v", wrapped, ns)
}
