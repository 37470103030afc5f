package armada

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ConfigKeys is the tree of config keys one Armada component reads: what
// Armada decodes its config into (viper, then mapstructure), read from
// Armada's own Go types for one release by internal/build/cmd/armadakeys.
// Keys match case-insensitively, as in Armada; Fields is keyed by the
// lower-case key.
type ConfigKeys struct {
	// Name is the key as Armada's config files spell it.
	Name string `json:"name,omitempty"`
	// Fields are the keys of a struct.
	Fields map[string]*ConfigKeys `json:"fields,omitempty"`
	// Values is the value of every key of a map.
	Values *ConfigKeys `json:"values,omitempty"`
	// Items is the element of a list.
	Items *ConfigKeys `json:"items,omitempty"`
	// Any value is accepted (an interface, or a type Armada decodes from a
	// string with its own hook); with no Fields, Values or Items and not
	// Any, the key holds a single value.
	Any bool `json:"any,omitempty"`
}

// ConfigTypes maps each component to the Go type Armada decodes its
// config into: see component.ConfigType.
func ConfigTypes() map[string]string {
	out := make(map[string]string, len(components))
	for _, c := range components {
		out[c.Name] = c.ConfigType
	}
	return out
}

// configKeysFS holds one file per supported Armada version,
// v<version>.json: component name to ConfigKeys. make generate writes
// them.
//
//go:embed configkeys/*.json
var configKeysFS embed.FS

var (
	configKeysOnce sync.Once
	configKeys     map[string]map[string]*ConfigKeys // version, component
	errConfigKeys  error
)

// configKeysFor returns the config keys of a component at an Armada
// version.
func configKeysFor(version, component string) (*ConfigKeys, error) {
	configKeysOnce.Do(func() {
		configKeys = map[string]map[string]*ConfigKeys{}
		files, err := configKeysFS.ReadDir("configkeys")
		if err != nil {
			errConfigKeys = err
			return
		}
		for _, f := range files {
			b, err := configKeysFS.ReadFile(path.Join("configkeys", f.Name()))
			if err != nil {
				errConfigKeys = err
				return
			}
			m := map[string]*ConfigKeys{}
			if err := json.Unmarshal(b, &m); err != nil {
				errConfigKeys = errors.Wrapf(err, "cannot decode %s", f.Name())
				return
			}
			configKeys[strings.TrimSuffix(strings.TrimPrefix(f.Name(), "v"), ".json")] = m
		}
	})
	if errConfigKeys != nil {
		return nil, errConfigKeys
	}
	k := configKeys[version][component]
	if k == nil {
		return nil, errors.Errorf("cannot find the config keys of Armada %s's %s: run make generate", version, component)
	}
	return k, nil
}

// checkConfigKeys refuses every key of a user's config override that
// Armada's component does not read: Armada would only log it as unused
// and carry on without it. Where another component reads the key, the
// error says which.
func checkConfigKeys(p *field.Path, version, component string, cfg map[string]any) field.ErrorList {
	keys, err := configKeysFor(version, component)
	if err != nil {
		return field.ErrorList{field.InternalError(p, err)}
	}
	return walkConfigKeys(p, nil, keys, cfg, func(at []string) string {
		var others []string
		for _, c := range components {
			if c.Name == component {
				continue
			}
			if k, err := configKeysFor(version, c.Name); err == nil && k.has(at) {
				others = append(others, c.Name)
			}
		}
		msg := fmt.Sprintf("Armada %s's %s has no config key %q", version, component, keyPath(at))
		if len(others) > 0 {
			msg += fmt.Sprintf("; the %s reads it: set it under spec.components.%s.config", strings.Join(others, " and "), settingsField(others[0]))
		}
		return msg
	})
}

// checkComposedKeys refuses a composed config with a key Armada's
// component at this version does not read: a setting of the claim that
// needs a newer Armada than spec.version, which Armada would silently
// ignore. The user's own keys were checked first (checkConfigKeys), so
// this names the composition's.
func checkComposedKeys(version, component string, cfg map[string]any) error {
	if !slices.Contains(SupportedVersions, version) {
		return nil
	}
	var unread []string
	errs := checkConfigKeys(field.NewPath("config"), version, component, cfg)
	for _, e := range errs {
		if e.Type == field.ErrorTypeInternal {
			return e
		}
		unread = append(unread, strings.TrimPrefix(e.Field, "config."))
	}
	if len(unread) == 0 {
		return nil
	}
	return errors.Errorf("Armada %s's %s does not read %s, which this claim's settings need: set spec.version to a newer release, or leave the setting out",
		version, component, strings.Join(unread, ", "))
}

// walkConfigKeys reports every key of v that keys does not have, in key
// order. Most configs have none, so the allocation-free accepts decides
// that first; only a config with an unknown key is walked again for the
// errors.
func walkConfigKeys(p *field.Path, at []string, keys *ConfigKeys, v any, unknown func([]string) string) field.ErrorList {
	if keys.accepts(v) {
		return nil
	}
	return walkConfigKeyErrors(p, at, keys, v, unknown)
}

// accepts reports whether every key of v is one k has.
func (k *ConfigKeys) accepts(v any) bool {
	if k.Any || v == nil {
		return true
	}
	switch t := v.(type) {
	case map[string]any:
		for key, val := range t {
			var next *ConfigKeys
			switch {
			case k.Fields != nil:
				next = k.field(key)
			case k.Values != nil:
				next = k.Values
			}
			if next == nil || !next.accepts(val) {
				return false
			}
		}
	case []any:
		if k.Items == nil {
			return true
		}
		for _, e := range t {
			if !k.Items.accepts(e) {
				return false
			}
		}
	}
	return true
}

// field looks a key up in k.Fields, which are lower case, without
// allocating for a short ASCII key.
func (k *ConfigKeys) field(name string) *ConfigKeys {
	var buf [64]byte
	if len(name) > len(buf) {
		return k.Fields[strings.ToLower(name)]
	}
	b := buf[:0]
	for i := range len(name) {
		c := name[i]
		switch {
		case c >= utf8.RuneSelf:
			return k.Fields[strings.ToLower(name)]
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return k.Fields[string(b)]
}

func walkConfigKeyErrors(p *field.Path, at []string, keys *ConfigKeys, v any, unknown func([]string) string) field.ErrorList {
	if keys.Any || v == nil {
		return nil
	}
	var errs field.ErrorList
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			kp, kat := p.Child(k), append(slices.Clip(at), k)
			var next *ConfigKeys
			switch {
			case keys.Fields != nil:
				next = keys.Fields[strings.ToLower(k)]
			case keys.Values != nil:
				next = keys.Values
			}
			if next == nil {
				if keys.Fields == nil && keys.Values == nil {
					return append(errs, field.Invalid(p, "{...}", fmt.Sprintf("Armada's %q is a single value, not an object", keyPath(at))))
				}
				msg := unknown(kat)
				if near := keys.nearest(k); near != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", near)
				}
				errs = append(errs, field.Invalid(kp, k, msg))
				continue
			}
			errs = append(errs, walkConfigKeyErrors(kp, kat, next, t[k], unknown)...)
		}
	case []any:
		if keys.Items == nil {
			break
		}
		for i, e := range t {
			errs = append(errs, walkConfigKeyErrors(p.Index(i), append(slices.Clip(at), fmt.Sprint(i)), keys.Items, e, unknown)...)
		}
	}
	return errs
}

// keyPath is a key's path as Armada's docs write it: a.b[0].c.
func keyPath(at []string) string {
	var b strings.Builder
	for i, k := range at {
		if _, err := strconv.Atoi(k); err == nil {
			b.WriteString("[" + k + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// has reports whether a key path (list indices as numbers) is one Armada
// reads.
func (k *ConfigKeys) has(at []string) bool {
	for _, s := range at {
		switch {
		case k.Any:
			return true
		case k.Fields != nil:
			if k = k.Fields[strings.ToLower(s)]; k == nil {
				return false
			}
		case k.Values != nil:
			k = k.Values
		case k.Items != nil:
			k = k.Items
		default:
			return false
		}
	}
	return true
}

// nearest is the struct key closest to a misspelt one, if any is close:
// at most a third of its letters differ.
func (k *ConfigKeys) nearest(key string) string {
	best, bestD := "", len(key)/3+1
	for _, lower := range slices.Sorted(maps.Keys(k.Fields)) {
		if d := editDistance(strings.ToLower(key), lower); d < bestD {
			best, bestD = k.Fields[lower].Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// UnreadConfigKeys returns the keys of cfg, a whole config of a component
// (for example Armada's own config/<component>/config.yaml), that Armada
// at version does not read, as lower-case dotted paths (list indices
// and map keys as path elements).
func UnreadConfigKeys(version, component string, cfg map[string]any) ([]string, error) {
	keys, err := configKeysFor(version, component)
	if err != nil {
		return nil, err
	}
	var out []string
	errs := walkConfigKeys(nil, nil, keys, cfg, func(at []string) string {
		out = append(out, strings.ToLower(strings.Join(at, ".")))
		return ""
	})
	if len(out) != len(errs) {
		return nil, errs.ToAggregate()
	}
	slices.Sort(out)
	return out, nil
}
