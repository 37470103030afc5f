package controlplane

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/armadaproject/armada-crossplane/internal/providers"
)

// TestProviderSQLPinned: the provider-sql the control plane runs is the one
// tools/provider-sql builds and the one whose CRDs internal/providers
// applies and validates against.
func TestProviderSQLPinned(t *testing.T) {
	p, ok := providers.Get("provider-sql")
	if !ok {
		t.Fatal("internal/providers pins no provider-sql")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "tools", "provider-sql", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	built := ""
	for _, r := range f.Require {
		if r.Mod.Path == p.Module {
			built = r.Mod.Version
		}
	}
	want := map[string]string{"ProviderSQLVersion": p.Version, "tools/provider-sql/go.mod": p.Version}
	got := map[string]string{"ProviderSQLVersion": ProviderSQLVersion, "tools/provider-sql/go.mod": built}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provider-sql versions differ from internal/providers' %s; -want +got:\n%s", p.Version, diff)
	}
}

// TestProviderSQLSharesCrossplaneVersions: tools/provider-sql requires
// every module it shares with tools/crossplane at tools/crossplane's
// version, but for the few listed here, so that the Go build cache
// compiles the Kubernetes libraries, gRPC and the rest once for Crossplane
// core and CLI and provider-sql (the build cache keys a package by its
// dependencies' versions too). Raising a pin in tools/crossplane means
// raising it here (`go get module@version` in tools/provider-sql).
func TestProviderSQLSharesCrossplaneVersions(t *testing.T) {
	// Modules provider-sql needs at another version, and why.
	differ := map[string]string{
		"github.com/crossplane/crossplane-runtime/v2": "provider-sql v0.16.0 imports apis/common, which crossplane-runtime v2.4.0 no longer has",
		"github.com/lib/pq": "provider-sql v0.16.0 requires a newer lib/pq than Crossplane's; only provider-sql builds it",
	}
	xp, psql := requires(t, "crossplane"), requires(t, "provider-sql")
	for m, v := range psql {
		want, shared := xp[m]
		if !shared || v == want {
			continue
		}
		if _, ok := differ[m]; !ok {
			t.Errorf("tools/provider-sql requires %s %s, tools/crossplane %s: require %s in tools/provider-sql, or list why not", m, v, want, want)
		}
	}
	for m := range differ {
		if _, ok := psql[m]; !ok {
			t.Errorf("%s is listed as differing, but tools/provider-sql does not require it", m)
		}
	}
}

// requires is what tools/<dir>/go.mod requires: module path to version.
func requires(t *testing.T, dir string) map[string]string {
	t.Helper()
	path := filepath.Join("..", "..", "tools", dir, "go.mod")
	b, err := os.ReadFile(path) //nolint:gosec // A go.mod of this repository.
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out
}
