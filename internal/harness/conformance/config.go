package conformance

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// unusedKeysLine matches Armada's warning about keys that match no config
// struct field: log.Warnf("Unused keys: %v", metadata.Unused) in LoadConfig
// (internal/common/startup.go). mapstructure names nested keys with dots.
var unusedKeysLine = regexp.MustCompile(`Unused keys: \[([^\]]*)\]`)

// unusedKeys returns the keys named by "Unused keys" warnings in a log.
func unusedKeys(log string) []string {
	matches := unusedKeysLine.FindAllStringSubmatch(log, -1)
	keys := make([]string, 0, len(matches))
	for _, m := range matches {
		keys = append(keys, strings.Fields(m[1])...)
	}
	sort.Strings(keys)
	return keys
}

// ArmadaUnusedKeys starts an Armada binary in Armada's source tree with no
// config but its built-in one and returns the keys it reports unused,
// lower-cased, with mapstructure's brackets as dots.
func ArmadaUnusedKeys(t *testing.T, bin, src, binary string) []string {
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
