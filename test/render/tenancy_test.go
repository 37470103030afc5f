package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// TestRenderTenancy renders examples through the real Crossplane CLI
// without their tenancy policies (the required resources hold only an
// unrelated object): what each names outside its namespace is refused
// with a Fatal result naming the field and the built-in policy's setting.
// With examples/tenancy-policy.yaml they render (TestRender and the team
// queue tests).
func TestRenderTenancy(t *testing.T) {
	tools, addr := setup(t)
	none := filepath.Join(t.TempDir(), "none.yaml")
	if err := os.WriteFile(none, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason      string
		example     string
		composition string
		xrd         string
		want        []string
	}{
		"WorkerClusters": {
			reason:  "examples/multi-cluster.yaml's executors in worker clusters need the platform to allow those provider configs.",
			example: "multi-cluster.yaml", composition: composition, xrd: xrd,
			want: []string{`spec.executors[0].cluster.providerConfigRef: Forbidden: ClusterProviderConfig "worker-a"`, "spec.providerConfigs.workerClusters"},
		},
		"ClusterScope": {
			reason:  "examples/namespaced.yaml's spec.clusterScope config needs the platform to allow it.",
			example: "namespaced.yaml", composition: nsComposition, xrd: nsXRD,
			want: []string{`spec.clusterScope.providerConfigRef: Forbidden: ClusterProviderConfig "in-cluster"`, "spec.providerConfigs.clusterScope"},
		},
		"QueueTarget": {
			reason:  "examples/team-queue.yaml's queue on another namespace's Armada needs the platform to allow it.",
			example: "team-queue.yaml", composition: queueComposition, xrd: queueXRD,
			want: []string{"spec.armada: Forbidden: Armada armada-prod/armada is in another namespace", "spec.queueArmadas"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := tools.Render(ctx, xprender.RenderOptions{
				XR: exampleXR(t, tc.example), Composition: tc.composition, XRD: tc.xrd, FunctionAddress: addr, RequiredResources: none,
			})
			for _, w := range append(tc.want, "the built-in tenancy policy") {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s\nrender: got %v, want a Fatal result containing %q", tc.reason, err, w)
				}
			}
		})
	}
}
