package conformance

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// TestConfigKeysMatchArmada checks the config keys the function accepts
// in overrides (internal/armada/configkeys, generated from Armada's Go
// types) against Armada itself: each binary starts with only its built-in
// config/<component>/config.yaml, and the keys Armada then reports as
// unused must be exactly the keys of that file the key tree refuses.
// Every other key of the file (most of what Armada reads) the tree
// accepts.
func TestConfigKeysMatchArmada(t *testing.T) {
	for _, version := range armada.SupportedVersions {
		t.Run(version, func(t *testing.T) { checkConfigKeys(t, version) })
	}
}

// checkConfigKeys is TestConfigKeysMatchArmada for one release.
//
//nolint:thelper // Each release is its own subtest: failures point into it.
func checkConfigKeys(t *testing.T, version string) {
	rel := conformance.Release(t, version)
	bin, src := rel.BinDir, rel.SourceDir
	checked, stale := 0, 0
	for _, component := range slices.Sorted(maps.Keys(armada.ConfigTypes())) {
		binary := strings.ReplaceAll(component, "-", "")
		t.Run(component, func(t *testing.T) {
			base, err := podrun.ReadYAML(filepath.Join(src, "config", binary, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := armada.UnreadConfigKeys(version, component, base)
			if err != nil {
				t.Fatal(err)
			}
			got := conformance.ArmadaUnusedKeys(t, filepath.Join(bin, binary), src, binary)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keys of Armada's config/%s/config.yaml: -refused by the key tree, +unused by Armada %s:\n%s", binary, version, diff)
			}
			n := 0
			podrun.Leaves(base, nil, func([]string) { n++ })
			checked += n
			stale += len(want)
			if len(want) > 0 {
				t.Logf("stale keys of Armada's config/%s/config.yaml: %v", binary, want)
			}
		})
	}
	t.Logf("Armada %s's built-in configs: %d keys, %d of them stale (unused by Armada and refused by the key tree)", version, checked, stale)
	if checked < 100 {
		t.Errorf("checked only %d keys", checked)
	}
}
