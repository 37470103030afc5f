// Package layout checks the repository's layout by role (docs/dev/layout.md):
// the shipped binaries build from the product alone, and no Go file grows
// past 600 lines.
package layout

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
