package jobflow

import (
	"os"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/node"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// TestUpgradeOnNode is the upgrade with jobs in flight (testUpgrade) on a
// real node: every pod the claim composes runs as a container (images
// laid out as Armada's Dockerfiles lay them out, for both releases, in the
// node's registry), readiness by the kubelet's probes, the composed
// NetworkPolicies enforced, and the jobs as containers that run through
// the whole upgrade.
func TestUpgradeOnNode(t *testing.T) {
	t.Parallel() // Beside TestJobFlow; nodes take turns (netlock).
	if os.Geteuid() != 0 {
		t.Fatal("TestUpgradeOnNode starts a real node (containerd, kubelet, network namespaces), which needs root: run the tests as root, as .ci/run does")
	}
	f := compose(t, composeOptions{
		version: fromVersion, upgradeTo: armada.DefaultVersion, node: true,
		spec: map[string]any{"executors": []any{map[string]any{"clusterId": "node"}}},
	})
	testUpgrade(t, f, armada.DefaultVersion)
}

// startNode starts the control plane, a real node beside it holding the
// images of the claim's release and of the one it upgrades to, and the
// far ends for the node's pods (jobflow.StartNodeBackends).
func (f *flow) startNode(t testing.TB, o composeOptions, bo jobflow.BackendOptions) {
	t.Helper()
	if len(o.nodes) > 0 || o.worker || len(o.relays) > 0 {
		t.Fatal("compose on a real node takes no KWOK nodes, worker cluster or relays")
	}
	ctx := t.Context()
	var images []node.Image
	for _, v := range []string{o.version, o.upgradeTo} {
		if v == "" {
			continue
		}
		im, err := node.ComposedImages(ctx, v, testenv.ToolBin(t, podrun.Ghostunnel, armada.TLSProxyVersion))
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range im {
			// ghostunnel's, Pulsar's and the job's images are each
			// release's alike.
			if !slices.ContainsFunc(images, func(have node.Image) bool { return have.Ref == i.Ref }) {
				images = append(images, i)
			}
		}
	}
	f.cp = controlplane.StartForTest(t, controlplane.Options{JobFlow: true, Workloads: true})
	f.node = node.StartForTest(t, node.Options{Config: f.cp.RESTConfig(), Images: images})
	cs, err := kubernetes.NewForConfig(f.cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	f.cs = cs
	f.be = jobflow.StartNodeBackends(t, f.node, cs, bo)
}

// nodeUpgradeJobs is how many jobs run through the upgrade on a real
// node, and nodeUpgradeSleep how long each runs: longer than the upgrade
// takes (about 30 s, from the patch to the claim Ready at the new
// release), so each is still running when the new executor has taken
// over.
const (
	nodeUpgradeJobs  = 2
	nodeUpgradeSleep = 90 * time.Second
)
