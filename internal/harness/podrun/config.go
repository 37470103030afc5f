package podrun

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Config is what one Armada process loads: its embedded base config
// file and the --config override files, in order, as Armada's LoadConfig
// (internal/common/startup.go) reads them.
type Config struct {
	// Base is config/<component>/config.yaml of the Armada source tree.
	Base map[string]any
	// Overrides are the rendered --config files, lowest precedence first.
	Overrides []map[string]any
}

// LoadConfig reads the base config of component from Armada's source tree
// and the override files.
func LoadConfig(armadaDir, component string, files []string) (*Config, error) {
	base, err := ReadYAML(filepath.Join(armadaDir, "config", component, "config.yaml"))
	if err != nil {
		return nil, errors.Wrap(err, "cannot read Armada's base config")
	}
	c := &Config{Base: base}
	for _, f := range files {
		o, err := ReadYAML(f)
		if err != nil {
			return nil, errors.Wrap(err, "cannot read rendered config")
		}
		c.Overrides = append(c.Overrides, o)
	}
	return c, nil
}

// ReadYAML reads a YAML file into a map.
func ReadYAML(file string) (map[string]any, error) {
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
func (c *Config) Has(key string) bool {
	_, ok := c.Get(key)
	return ok
}

// Get returns a dotted key path's value from the file with the highest
// precedence that sets it.
func (c *Config) Get(key string) (any, bool) {
	for _, o := range slices.Backward(c.Overrides) {
		if v, ok := Lookup(o, key); ok {
			return v, true
		}
	}
	return Lookup(c.Base, key)
}

// InOverride reports whether a dotted key path is set by a rendered file.
func (c *Config) InOverride(key string) bool {
	for _, o := range c.Overrides {
		if _, ok := Lookup(o, key); ok {
			return true
		}
	}
	return false
}

// InBase reports whether a dotted key path is set by Armada's base config.
func (c *Config) InBase(key string) bool {
	_, ok := Lookup(c.Base, key)
	return ok
}

// EnvNames are the environment variables viper honours for this config:
// ARMADA_ plus the upper-cased path, joined by "_", of every leaf key in
// some loaded file. Viper ignores any other ARMADA_ variable.
func (c *Config) EnvNames() map[string]bool {
	names := map[string]bool{}
	for _, m := range append([]map[string]any{c.Base}, c.Overrides...) {
		Leaves(m, nil, func(p []string) {
			names["ARMADA_"+strings.ToUpper(strings.Join(p, "_"))] = true
		})
	}
	return names
}

// Leaves calls fn with the path of every leaf under m. An empty map is a
// leaf.
func Leaves(m map[string]any, prefix []string, fn func([]string)) {
	for k, v := range m {
		p := append(append([]string{}, prefix...), k)
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			Leaves(sub, p, fn)
			continue
		}
		fn(p)
	}
}

// Lookup finds a dotted, case-insensitive key path in m. Map keys may
// themselves contain dots (e.g. "nvidia.com/gpu"), so every key that
// prefixes the path is tried.
func Lookup(m map[string]any, key string) (any, bool) {
	for k, v := range m {
		switch {
		case strings.EqualFold(k, key):
			return v, true
		case len(key) > len(k) && key[len(k)] == '.' && strings.EqualFold(key[:len(k)], k):
			if sub, ok := v.(map[string]any); ok {
				if got, ok := Lookup(sub, key[len(k)+1:]); ok {
					return got, true
				}
			}
		}
	}
	return nil, false
}

// EnvName is the environment variable viper maps onto a dotted key path.
func EnvName(key string) string {
	return "ARMADA_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// PortKeys are the dotted config keys Armada components listen on. Which of
// them a component has is discovered from its loaded config files.
var PortKeys = []string{
	"grpcPort", "httpPort", "metricsPort", "apiPort",
	"grpc.port", "http.port", "metrics.port", "metric.port", "profiling.port",
}

// PortOverrides moves every listening port a component's config sets to a
// free loopback port, so processes do not collide with each other or with
// anything else on the machine: free(key) gives the port for a key. It
// returns the key paths it moved and the environment overriding them.
func PortOverrides(c *Config, free func(key string) int) (map[string]int, []EnvVar) {
	moved := map[string]int{}
	var env []EnvVar
	for _, k := range PortKeys {
		v, ok := c.Get(k)
		if !ok || v == nil || fmt.Sprint(v) == "0" {
			continue
		}
		p := free(k)
		moved[k] = p
		env = append(env, EnvVar{Name: EnvName(k), Value: fmt.Sprint(p)})
	}
	return moved, env
}
