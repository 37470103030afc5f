package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/metricnames"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

const (
	// StartTimeout bounds how long a component may take to reach its
	// markers, and its health endpoint to answer.
	StartTimeout = 30 * time.Second
	// migrationTimeout bounds one migration run.
	migrationTimeout = 60 * time.Second
	// tailLines of a process's log are printed when its check fails.
	tailLines = 40
)

// Env is what every render of one Armada release shares.
type Env struct {
	// Version is the release, x.y.z.
	Version string
	// BinDir holds the release's Armada binaries.
	BinDir string
	// SourceDir is the release's module source tree: the binaries' working
	// directory, whose config/<component>/config.yaml they load first.
	SourceDir string
	// Kubeconfig is a kubeconfig for an API server on KubeconfigPort,
	// where nothing listens.
	Kubeconfig     string
	KubeconfigPort int
	// Metrics indexes the metric names registered in the release's source,
	// which the scraped ones are checked against.
	Metrics *metricnames.Index
	// Home is the API server standing in for the cluster claims are
	// applied to (ThisCluster), shared by every example.
	Home *controlplane.WorkerClusters
	// refusedCAShown is set once an in-cluster executor of this release
	// was shown refusing the scheduler without the rendered CA; examples
	// run at once, so mu guards it.
	mu             sync.Mutex
	refusedCAShown bool
	// Brokers are the real Pulsar brokers; each example holds one of its
	// own while it runs (Brokers.hold).
	Brokers *Brokers
}

// ShowRefusedCA reports whether no in-cluster executor of this release has
// been shown refusing the scheduler without the rendered CA yet, and if so
// leaves that to the caller: it is shown once per release.
func (e *Env) ShowRefusedCA() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := !e.refusedCAShown
	e.refusedCAShown = true
	return first
}

// NewEnv finds a release's binaries and source, failing the test if they
// are missing.
func NewEnv(t *testing.T, version string) *Env {
	t.Helper()
	rel := Release(t, version)
	e := &Env{Version: version, BinDir: rel.BinDir, SourceDir: rel.SourceDir, KubeconfigPort: testenv.FreePort(t)}
	e.Kubeconfig = writeKubeconfig(t, e.KubeconfigPort)
	dirs, err := metricnames.SourceDirs(t.Context(), "v"+version)
	if err != nil {
		t.Fatal(err)
	}
	if e.Metrics, err = metricnames.Scan(dirs...); err != nil {
		t.Fatal(err)
	}
	return e
}

// Release returns an Armada release's binaries and module source tree
// (jobflow.FindRelease, which the job-flow suite uses too), failing the
// test with what to build if either is missing.
func Release(t *testing.T, version string) podrun.Release {
	t.Helper()
	rel, _, err := jobflow.FindRelease(t.Context(), version)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// writeKubeconfig writes a kubeconfig for an API server on a loopback port
// nothing listens on, so Kubernetes clients build but every call fails fast.
func writeKubeconfig(t *testing.T, port int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
users:
- name: conformance
  user: {token: conformance}
contexts:
- name: conformance
  context: {cluster: conformance, user: conformance}
current-context: conformance
`, port)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
