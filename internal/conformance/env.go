package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/metricnames"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
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
	// applied to (thisCluster), shared by every example.
	Home *workerClusters
	// RefusedCAShown is set once an in-cluster executor of this release
	// was shown refusing the scheduler without the rendered CA.
	RefusedCAShown bool
	// Brokers are the real Pulsar brokers every example shares.
	Brokers *brokers
}

// NewEnv finds a release's binaries and source, failing the test if they
// are missing.
func NewEnv(t *testing.T, version string) *Env {
	t.Helper()
	e := &Env{Version: version, BinDir: ArmadaBinDir(t, version), SourceDir: ArmadaSourceDir(t, version), KubeconfigPort: testenv.FreePort(t)}
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

// ArmadaBinDir returns the directory holding every Armada binary of a
// release, failing the test if one is missing.
func ArmadaBinDir(t *testing.T, version string) string {
	t.Helper()
	root := os.Getenv("ARMADA_BIN_ROOT")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("cannot find the home directory: %v", err)
		}
		root = filepath.Join(home, ".cache", "armada-crossplane", "bin")
	}
	dir := filepath.Join(root, "armada-v"+version)
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b)) //nolint:gosec // G703: the binary cache this machine's make armada-bins fills, not user input.
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("Armada %s binary %s is missing from %s: run `make armada-bins` (or tools/armada/build.sh v%s)", version, b, dir, version)
		}
	}
	return dir
}

// ArmadaSourceDir returns a release's module source tree in the module
// cache.
func ArmadaSourceDir(t *testing.T, version string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("cannot run `go env GOMODCACHE`: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "armadaproject", "armada@v"+version)
	if _, err := os.Stat(filepath.Join(dir, "config", "server", "config.yaml")); err != nil {
		t.Fatalf("Armada %s source is not in the module cache (%v): run `make armada-bins`, which downloads it", version, err)
	}
	return dir
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
