package thirdparty

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestGeneratedCRDs proves every Generated provider's committed CRDs are
// those of its pinned version: the directory is named by the version, and
// tools/promcrds, which `make generate` runs controller-gen in, requires
// exactly that version of the module.
func TestGeneratedCRDs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "tools", "promcrds", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, r := range mf.Require {
		required[r.Mod.Path] = r.Mod.Version
	}
	n := 0
	for _, p := range Pinned {
		if !p.Generated {
			continue
		}
		n++
		if got := required[p.Module]; got != p.Version {
			t.Errorf("%s: tools/promcrds requires %s %q, the table pins %q; align them and run make generate", p.Name, p.Module, got, p.Version)
		}
		files, err := filepath.Glob(filepath.Join(GeneratedDir(p), "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no CRDs in %s (err: %v); run make generate", p.Name, GeneratedDir(p), err)
		}
	}
	if n == 0 {
		t.Error("no Generated provider in the table")
	}
}
