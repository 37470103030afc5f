package install

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/xpkg"
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
	home, err := os.UserHomeDir()
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
			CLI: cliPath, BinDir: filepath.Join(home, ".cache", "armada-crossplane", "bin"), OutDir: dir,
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

// get fetches a cluster-scoped object; ok is false if it does not exist.
func get(ctx context.Context, c client.Client, apiVersion, kind, name string) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(ctx, types.NamespacedName{Name: name}, u)
	return u, err == nil
}

// conditions renders an object's conditions as Type=Status (Reason), the
// form the expectations below use.
func conditions(u *unstructured.Unstructured) map[string]string {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := map[string]string{}
	for _, ci := range raw {
		m, ok := ci.(map[string]any)
		if !ok {
			continue
		}
		out[fmt.Sprint(m["type"])] = fmt.Sprintf("%v (%v)", m["status"], m["reason"])
	}
	return out
}

// messages renders an object's condition messages, for failures.
func messages(u *unstructured.Unstructured) string {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var b bytes.Buffer
	for _, ci := range raw {
		if m, ok := ci.(map[string]any); ok {
			fmt.Fprintf(&b, "  %v=%v (%v): %v\n", m["type"], m["status"], m["reason"], m["message"])
		}
	}
	return b.String()
}

// message returns the message of an object's condition of type typ.
func message(u *unstructured.Unstructured, typ string) string {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, ci := range raw {
		if m, ok := ci.(map[string]any); ok && m["type"] == typ {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

// waitFor polls cond until it holds, failing the test with its last report
// after installTimeout.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < installTimeout {
		var ok bool
		if ok, last = cond(); ok {
			t.Logf("%s after %.1fs", what, time.Since(start).Seconds())
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last state:\n%s", installTimeout, what, last)
}
