package node

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTestImagesStandardLibraryOnly: the programs of the pause, job and
// probe images import only the standard library. They build statically
// (CGO_ENABLED=0); with crossplane-runtime's errors package they imported
// about 700 packages (Kubernetes' apimachinery among them), each compiled
// and linked into every image, some 80 s of a cold make run before the
// node could start when nothing else compiled without cgo.
func TestTestImagesStandardLibraryOnly(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./testimages/...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cannot list the test images' packages: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	want := []string{
		modulePath + "/internal/harness/node/testimages/job",
		modulePath + "/internal/harness/node/testimages/pause",
		modulePath + "/internal/harness/node/testimages/probe",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the test images import more than the standard library (-want +got):\n%s", diff)
	}
}
