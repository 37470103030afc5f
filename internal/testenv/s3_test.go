package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestVersityGWPinned keeps the version StartS3 looks for equal to the one
// tools/versitygw builds, so a raised pin is never run under the old
// binary's name.
func TestVersityGWPinned(t *testing.T) {
	path := filepath.Join("..", "..", "tools", "versitygw", "go.mod")
	b, err := os.ReadFile(path) //nolint:gosec // A go.mod of this repository.
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == "github.com/versity/versitygw" {
			if r.Mod.Version != VersityGWVersion {
				t.Errorf("tools/versitygw builds versitygw %s, StartS3 runs %s: change VersityGWVersion with the pin", r.Mod.Version, VersityGWVersion)
			}
			return
		}
	}
	t.Errorf("%s does not require github.com/versity/versitygw", path)
}

// TestS3 starts the server, creates a bucket and lists what is in it.
func TestS3(t *testing.T) {
	s := StartS3(t)
	s.CreateBucket(t, "b")
	if got := s.Keys(t, "b"); len(got) != 0 {
		t.Errorf("a new bucket holds %v, want nothing", got)
	}
}
