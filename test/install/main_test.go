// Package install proves the packages `make xpkg` builds: their contents
// (packages_test.go) and that Crossplane's package manager installs the
// Configuration and its dependencies from an OCI registry (install_test.go).
// The Crossplane CLI must be built (`make tools`); the install test also
// needs the control plane's binaries (`make cluster-bins`). Neither test
// skips when they are missing: they fail saying what to run.
package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/build/image"
	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// version is the version the tests build the packages at: a fixed one, so
// test runs do not depend on the state of the git tree.
const version = "v0.0.1-test"

// built holds the packages built once for every test in this package.
var built struct {
	once sync.Once
	dir  string
	res  *xpkg.Result
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// cli returns the pinned Crossplane CLI, failing the test if it is missing.
func cli(t *testing.T) string {
	t.Helper()
	p, err := xprender.FindCLI()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// packages builds every available package once, for amd64 and arm64, at
// version and under xpkg.DefaultRegistry, exactly as `make xpkg` does.
func packages(t *testing.T) *xpkg.Result {
	t.Helper()
	c := cli(t)
	built.once.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			built.err = err
			return
		}
		// Shared by every test, so not a t.TempDir; TestMain removes it.
		built.dir, err = os.MkdirTemp("", "armada-xpkg-test-") //nolint:usetesting // Outlives the first test that builds.
		if err != nil {
			built.err = err
			return
		}
		built.res, built.err = xpkg.Build(context.Background(), xpkg.Options{
			RepoRoot: root, OutDir: built.dir, CLI: c, Version: version,
			Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "xpkg: "+format+"\n", args...) },
		})
	})
	if built.err != nil {
		t.Fatalf("cannot build packages: %v", built.err)
	}
	return built.res
}

// lookup returns the built package named name.
func lookup(t *testing.T, res *xpkg.Result, name string) xpkg.Built {
	t.Helper()
	b, ok := res.Lookup(name)
	if !ok {
		t.Fatalf("package %s was not built (skipped: %v)", name, res.Skipped)
	}
	return b
}

// hostFile returns the package file for the host's architecture.
func hostFile(t *testing.T, b xpkg.Built) string {
	t.Helper()
	if f, ok := b.Files[""]; ok {
		return f
	}
	f, ok := b.Files[runtime.GOARCH]
	if !ok {
		t.Fatalf("package %s has no file for %s (architectures %v)", b.Name, runtime.GOARCH, image.Architectures)
	}
	return f
}
