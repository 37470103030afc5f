package controlplane

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestToolModulesShareVersions: the modules built in one run require every
// module they share at one version, but for the few listed with a reason,
// so that the Go build cache compiles the Kubernetes libraries, gRPC,
// protobuf and the rest once for the project's tests, Crossplane core and
// CLI, and provider-sql: the cache keys a compiled package by its source,
// its flags and its dependencies' versions. Raising a pin in one of them
// means raising it in the others (`go get module@version` in each).
func TestToolModulesShareVersions(t *testing.T) {
	cases := map[string]struct {
		module, with string
		// differ are modules module needs at another version, and why.
		differ map[string]string
	}{
		"CrossplaneWithProject": {
			module: "tools/crossplane", with: ".",
		},
		"ProviderSQLWithCrossplane": {
			module: "tools/provider-sql", with: "tools/crossplane",
			differ: map[string]string{
				"github.com/crossplane/crossplane-runtime/v2": "provider-sql v0.16.0 imports apis/common, which crossplane-runtime v2.4.0 no longer has",
				"github.com/lib/pq":                           "provider-sql v0.16.0 requires a newer lib/pq than Crossplane's; only provider-sql builds it",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, with := requires(t, tc.module), requires(t, tc.with)
			for m, v := range got {
				want, shared := with[m]
				if !shared || v == want {
					continue
				}
				if _, ok := tc.differ[m]; !ok {
					t.Errorf("%s requires %s %s, %s %s: require %s in both, or list why not", tc.module, m, v, tc.with, want, want)
				}
			}
			for m := range tc.differ {
				if _, ok := got[m]; !ok {
					t.Errorf("%s is listed as differing, but %s does not require it", m, tc.module)
				}
			}
		})
	}
}

// requires is what the go.mod in dir (relative to the repository root)
// requires: module path to version.
func requires(t *testing.T, dir string) map[string]string {
	t.Helper()
	path := filepath.Join("..", "..", dir, "go.mod")
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
