package install

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// installTimeout bounds each wait for Crossplane's package manager.
const installTimeout = 3 * time.Minute

// startRegistry serves an in-memory OCI registry on 127.0.0.1. Crossplane
// and the CLI (go-containerregistry) talk plain HTTP to a loopback
// registry, so it needs no certificate.
func startRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// local returns where ref (REGISTRY/PATH:TAG) lives in the local registry.
func local(host, ref string) string {
	_, path, _ := strings.Cut(ref, "/")
	return host + "/" + path
}

// pushMirrors builds the packages of every dependency that is not ours
// from their real metadata and CRDs (see xpkg.Mirrors) and pushes them to
// the local registry under their real paths: their registries are not
// reachable here (no internet).
func pushMirrors(t *testing.T, cliPath, host string) {
	t.Helper()
	binDir, err := testutil.ToolDir("")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := xpkg.MirrorsNeeded(xpkg.DefaultRegistry)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		dir := t.TempDir()
		file, err := xpkg.BuildMirror(t.Context(), m, xpkg.MirrorOptions{
			CLI: cliPath, BinDir: binDir, OutDir: dir,
		})
		if err != nil {
			t.Fatal(err)
		}
		b := xpkg.Built{Name: m.Repo, Files: map[string]string{"": file}}
		if err := xpkg.Push(t.Context(), cliPath, dir, b, local(host, m.Repo+":"+m.Version)); err != nil {
			t.Fatal(err)
		}
	}
}

// push pushes a built package to the local registry under its real path.
func push(t *testing.T, cliPath, host string, b xpkg.Built) {
	t.Helper()
	if err := xpkg.Push(t.Context(), cliPath, t.TempDir(), b, local(host, b.Ref)); err != nil {
		t.Fatal(err)
	}
}

// imageConfig rewrites packages under prefix to the local registry.
func imageConfig(name, prefix, host string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1beta1",
		"kind":       "ImageConfig",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"matchImages":  []any{map[string]any{"type": "Prefix", "prefix": prefix}},
			"rewriteImage": map[string]any{"prefix": local(host, prefix)},
		},
	}}
}

// conditions renders an object's conditions as Type=Status (Reason), the
// form the expectations below use.
func conditions(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, c := range manifest.Conditions(u) {
		out[c.Type] = c.Status + " (" + c.Reason + ")"
	}
	return out
}

// messages renders an object's conditions with their messages, for
// failures.
func messages(u *unstructured.Unstructured) string {
	return "  " + manifest.ConditionSummary(u) + "\n"
}

// message returns the message of an object's condition of type typ.
func message(u *unstructured.Unstructured, typ string) string {
	c, _ := manifest.ConditionOf(u, typ)
	return c.Message
}

// wait bounds each wait for Crossplane's package manager.
var wait = testutil.Wait{Timeout: installTimeout}

// waitFor polls cond until it holds, logging how long that took, and
// fails the test with its last report after installTimeout.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	t.Logf("%s after %.1fs", what, wait.Until(t, what, cond).Seconds())
}
