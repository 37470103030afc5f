package armada

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestCheckOwnedKeysMatchesPathSet compares checkOwnedKeys, which follows
// only the composed config's keys on each override key's path, with the
// definition it implements: the set of every owned lower-case dotted path,
// listed in full. Random configs mix cases, dotted and non-ASCII keys,
// empty objects and nulls.
func TestCheckOwnedKeysMatchesPathSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2))
	keys := []string{"a", "A", "b", "a.b", "A.B", "b.a", "corsAllowedOrigins", "É", "é", "a.É", "ab"}
	var random func(depth int) map[string]any
	random = func(depth int) map[string]any {
		m := map[string]any{}
		for range rng.IntN(4) {
			k := keys[rng.IntN(len(keys))]
			switch r := rng.IntN(6); {
			case depth < 3 && r < 3:
				m[k] = random(depth + 1)
			case r == 3:
				m[k] = nil
			case r == 4:
				m[k] = map[string]any{}
			default:
				m[k] = 1
			}
		}
		return m
	}
	refused := 0
	for i := range 20000 {
		cfg, override := random(0), random(0)
		want := checkOwnedKeysByPathSet(field.NewPath("config"), cfg, override)
		got := checkOwnedKeys(field.NewPath("config"), cfg, override)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: checkOwnedKeys(%v, %v): -want, +got:\n%s", i, cfg, override, diff)
		}
		if len(want) > 0 {
			refused++
		}
	}
	// The cases must exercise both outcomes.
	if refused < 1000 || refused > 19000 {
		t.Errorf("%d of 20000 random overrides refused: the test data does not exercise both outcomes", refused)
	}
}

// checkOwnedKeysByPathSet is checkOwnedKeys by its definition.
func checkOwnedKeysByPathSet(p *field.Path, cfg, override map[string]any) field.ErrorList {
	owned := map[string]bool{}
	var paths func(m map[string]any, prefix string)
	paths = func(m map[string]any, prefix string) {
		for k, v := range m {
			key := prefix + strings.ToLower(k)
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				paths(sub, key+".")
				continue
			}
			owned[key] = true
		}
	}
	paths(cfg, "")
	under := func(path string) bool {
		for k := range owned {
			if strings.HasPrefix(k, path+".") {
				return true
			}
		}
		return false
	}
	var errs field.ErrorList
	var walk func(p *field.Path, m map[string]any, prefix string)
	walk = func(p *field.Path, m map[string]any, prefix string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			key := prefix + strings.ToLower(k)
			if slices.Contains(supportedOverrides, key) {
				continue
			}
			if sub, ok := m[k].(map[string]any); ok && !owned[key] {
				walk(p.Child(k), sub, key+".")
				continue
			}
			if owned[key] || under(key) {
				errs = append(errs, field.Forbidden(p.Child(k), "the composition sets Armada's "+key+" from "+ownedKeyHint(key)+": change it there"))
			}
		}
	}
	walk(p, override, "")
	return errs
}
