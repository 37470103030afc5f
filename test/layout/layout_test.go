// Package layout checks the repository's layout by role (docs/dev/layout.md):
// the shipped binaries build from the product alone, no Go file grows
// past 600 lines, and internal/armada's package doc maps its files.
package layout

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

const module = "github.com/armadaproject/armada-crossplane/"

// TestShippedBinariesImportOnlyProduct: function-armada and provider-armada
// build from the product packages and apis/ only, never from the test
// harness (internal/harness) or the build tooling (internal/build).
func TestShippedBinariesImportOnlyProduct(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}}", "./functions/armada", "./cmd/provider")
	cmd.Dir = testutil.Root()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var wrong []string
	for p := range strings.FieldsSeq(string(out)) {
		rel, ok := strings.CutPrefix(p, module)
		if !ok {
			continue
		}
		if strings.HasPrefix(rel, "internal/harness/") || strings.HasPrefix(rel, "internal/build/") {
			wrong = append(wrong, rel)
		}
	}
	if diff := cmp.Diff([]string(nil), wrong); diff != "" {
		t.Errorf("the shipped binaries import harness or build packages (move the package to internal/, or stop importing it): -want, +got:\n%s", diff)
	}
}

// maxLines is the longest a Go file may be; generated zz_ files excepted.
const maxLines = 600

// TestNoLongFiles: no Go file of the module is over maxLines lines; split
// one by concern.
func TestNoLongFiles(t *testing.T) {
	root := testutil.Root()
	var long []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// tools/ holds other modules; dot and underscore directories are not sources.
			if rel == "tools" || (rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasPrefix(d.Name(), "zz_") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Count(b, []byte("\n")) > maxLines {
			long = append(long, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string(nil), long); diff != "" {
		t.Errorf("Go files over %d lines (split by concern): -want, +got:\n%s", maxLines, diff)
	}
}

// TestArmadaDocMapsFiles: internal/armada's package doc (doc.go) is the
// map of its concerns, so it names every non-test file of the package, and
// every file it names exists.
func TestArmadaDocMapsFiles(t *testing.T) {
	dir := filepath.Join(testutil.Root(), "internal", "armada")
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("internal/armada/doc.go has no package doc")
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`[a-z0-9_]+\.go\b`).FindAllString(f.Doc.Text(), -1) {
		named[m] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	exist := map[string]bool{}
	var unnamed []string
	for _, p := range files {
		name := filepath.Base(p)
		exist[name] = true
		if name != "doc.go" && !strings.HasSuffix(name, "_test.go") && !named[name] {
			unnamed = append(unnamed, name)
		}
	}
	var missing []string
	for name := range named {
		if !exist[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if diff := cmp.Diff([]string(nil), unnamed); diff != "" {
		t.Errorf("files internal/armada/doc.go does not name (add each to the map of concerns): -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("files internal/armada/doc.go names that do not exist: -want, +got:\n%s", diff)
	}
}
