package testutil

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolCache(t *testing.T) {
	cases := map[string]struct {
		env       map[string]string
		dir, tool string
	}{
		"Home": {
			env:  map[string]string{"HOME": "/home/x"},
			dir:  "/home/x/.cache/armada-crossplane/bin",
			tool: "/home/x/.cache/armada-crossplane/bin/ghostunnel-v1.8.4",
		},
		"Cache": {
			env:  map[string]string{"ARMADA_CROSSPLANE_CACHE": "/c"},
			dir:  "/c/bin",
			tool: "/c/bin/ghostunnel-v1.8.4",
		},
		"Overrides": {
			env:  map[string]string{"ARMADA_CROSSPLANE_CACHE": "/c", "TEST_DIR": "/d", "TEST_BIN": "/b/ghostunnel"},
			dir:  "/d",
			tool: "/b/ghostunnel",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"HOME", "ARMADA_CROSSPLANE_CACHE", "TEST_DIR", "TEST_BIN"} {
				t.Setenv(k, tc.env[k])
			}
			dir, err := ToolDir("TEST_DIR")
			if err != nil {
				t.Fatal(err)
			}
			tool, err := Tool("TEST_BIN", "ghostunnel", "v1.8.4")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.dir, tc.tool}, []string{filepath.ToSlash(dir), filepath.ToSlash(tool)}); diff != "" {
				t.Errorf("ToolDir, Tool: -want, +got:\n%s", diff)
			}
		})
	}
}
