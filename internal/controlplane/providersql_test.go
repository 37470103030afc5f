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
