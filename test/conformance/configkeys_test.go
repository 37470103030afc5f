package conformance

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/armadaproject/armada-crossplane/internal/armada"
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
	bin, src := armadaBinDir(t, version), armadaSourceDir(t, version)
	checked, stale := 0, 0
	for _, component := range slices.Sorted(maps.Keys(armada.ConfigTypes())) {
		binary := strings.ReplaceAll(component, "-", "")
		t.Run(component, func(t *testing.T) {
			base, err := readYAML(filepath.Join(src, "config", binary, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := armada.UnreadConfigKeys(version, component, base)
			if err != nil {
				t.Fatal(err)
			}
			got := armadaUnusedKeys(t, filepath.Join(bin, binary), src, binary)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keys of Armada's config/%s/config.yaml: -refused by the key tree, +unused by Armada %s:\n%s", binary, version, diff)
			}
			n := 0
			leaves(base, nil, func([]string) { n++ })
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

// armadaUnusedKeys starts an Armada binary in Armada's source tree with no
// config but its built-in one and returns the keys it reports unused,
// lower-cased, with mapstructure's brackets as dots.
func armadaUnusedKeys(t *testing.T, bin, src, binary string) []string {
	t.Helper()
	var args []string
	if binary == "scheduler" {
		args = []string{"run"}
	}
	p, err := startProcess(t, bin, src, args, []string{"HOME=" + t.TempDir()}, filepath.Join(t.TempDir(), binary+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// LoadConfig logs "Read base config", decodes, and warns about unused
	// keys at once; what a component logs next comes after.
	loaded := regexp.MustCompile(`Read base config from[^\n]*\n[^\n]*\n`)
	if !p.Until(30*time.Second, loaded.MatchString) {
		if exited, _ := p.Exited(); !exited {
			t.Fatalf("%s did not load its config in 30s:\n%s", binary, p.Tail(tailLines))
		}
	}
	unused := unusedKeys(p.Log())
	keys := make([]string, 0, len(unused))
	for _, k := range unused {
		k = strings.ToLower(k)
		k = strings.NewReplacer("[", ".", "]", "").Replace(k)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
