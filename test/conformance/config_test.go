package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// armadaConfig is what one Armada process loads: its embedded base config
// file and the --config override files, in order, as Armada's LoadConfig
// (internal/common/startup.go) reads them.
type armadaConfig struct {
	// Base is config/<component>/config.yaml of the Armada source tree.
	Base map[string]any
	// Overrides are the rendered --config files, lowest precedence first.
	Overrides []map[string]any
}

// loadArmadaConfig reads the base config of component from Armada's source
// tree and the override files.
func loadArmadaConfig(armadaDir, component string, files []string) (*armadaConfig, error) {
	base, err := readYAML(filepath.Join(armadaDir, "config", component, "config.yaml"))
	if err != nil {
		return nil, errors.Wrap(err, "cannot read Armada's base config")
	}
	c := &armadaConfig{Base: base}
	for _, f := range files {
		o, err := readYAML(f)
		if err != nil {
			return nil, errors.Wrap(err, "cannot read rendered config")
		}
		c.Overrides = append(c.Overrides, o)
	}
	return c, nil
}

// readYAML reads a YAML file into a map.
func readYAML(file string) (map[string]any, error) {
	b, err := os.ReadFile(file) //nolint:gosec // The test's own input files.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", file)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, errors.Wrapf(err, "cannot parse %s", file)
	}
	return m, nil
}

// Has reports whether a dotted key path is set in any loaded file. Keys are
// case-insensitive, as in viper.
func (c *armadaConfig) Has(key string) bool {
	_, ok := c.Get(key)
	return ok
}

// Get returns a dotted key path's value from the file with the highest
// precedence that sets it.
func (c *armadaConfig) Get(key string) (any, bool) {
	for _, o := range slices.Backward(c.Overrides) {
		if v, ok := lookup(o, key); ok {
			return v, true
		}
	}
	return lookup(c.Base, key)
}

// InOverride reports whether a dotted key path is set by a rendered file.
func (c *armadaConfig) InOverride(key string) bool {
	for _, o := range c.Overrides {
		if _, ok := lookup(o, key); ok {
			return true
		}
	}
	return false
}

// InBase reports whether a dotted key path is set by Armada's base config.
func (c *armadaConfig) InBase(key string) bool {
	_, ok := lookup(c.Base, key)
	return ok
}

// EnvNames are the environment variables viper honours for this config:
// ARMADA_ plus the upper-cased path, joined by "_", of every leaf key in
// some loaded file. Viper ignores any other ARMADA_ variable.
func (c *armadaConfig) EnvNames() map[string]bool {
	names := map[string]bool{}
	for _, m := range append([]map[string]any{c.Base}, c.Overrides...) {
		leaves(m, nil, func(p []string) {
			names["ARMADA_"+strings.ToUpper(strings.Join(p, "_"))] = true
		})
	}
	return names
}

// leaves calls fn with the path of every leaf under m. An empty map is a
// leaf.
func leaves(m map[string]any, prefix []string, fn func([]string)) {
	for k, v := range m {
		p := append(append([]string{}, prefix...), k)
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			leaves(sub, p, fn)
			continue
		}
		fn(p)
	}
}

// lookup finds a dotted, case-insensitive key path in m. Map keys may
// themselves contain dots (e.g. "nvidia.com/gpu"), so every key that
// prefixes the path is tried.
func lookup(m map[string]any, key string) (any, bool) {
	for k, v := range m {
		switch {
		case strings.EqualFold(k, key):
			return v, true
		case len(key) > len(k) && key[len(k)] == '.' && strings.EqualFold(key[:len(k)], k):
			if sub, ok := v.(map[string]any); ok {
				if got, ok := lookup(sub, key[len(k)+1:]); ok {
					return got, true
				}
			}
		}
	}
	return nil, false
}

// envName is the environment variable viper maps onto a dotted key path.
func envName(key string) string {
	return "ARMADA_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

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

// portKeys are the dotted config keys Armada components listen on. Which of
// them a component has is discovered from its loaded config files.
var portKeys = []string{
	"grpcPort", "httpPort", "metricsPort", "apiPort",
	"grpc.port", "http.port", "metrics.port", "metric.port", "profiling.port",
}

// portOverrides moves every listening port a component's config sets to a
// free loopback port, so processes do not collide with each other or with
// anything else on the machine. It returns the key paths it moved and the
// environment overriding them.
func portOverrides(c *armadaConfig, free func() int) (map[string]int, []envVar) {
	moved := map[string]int{}
	var env []envVar
	for _, k := range portKeys {
		v, ok := c.Get(k)
		if !ok || v == nil || fmt.Sprint(v) == "0" {
			continue
		}
		p := free()
		moved[k] = p
		env = append(env, envVar{Name: envName(k), Value: fmt.Sprint(p)})
	}
	return moved, env
}
