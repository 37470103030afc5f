package armada

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedOverrides are the keys the composition sets that a user's
// config may still override (lower-case dotted paths). docs/guides/config-overrides.md
// lists them beside the owned keys.
var supportedOverrides = []string{
	// The origins the browser may call from: the composition allows the
	// ingress hosts; a site may need others.
	"corsallowedorigins",
	// Lookout's title: the composition names the Armada; a site may name
	// it otherwise.
	"uiconfig.customtitle",
	// Where the browser reaches binoculars: the composition names its
	// Service, which spec.ingress does not expose; a site that exposes
	// it points the UI there (docs/guides/tls.md).
	"uiconfig.binocularsbaseurlpattern",
}

// ownedKeyHints say where in the spec the owned keys under a path come
// from (lower-case dotted path prefixes, longest first wins).
var ownedKeyHints = map[string]string{
	"auth":                                 "spec.auth",
	"postgres":                             "spec.postgres",
	"eventsapiredis":                       "spec.redis",
	"redis":                                "spec.redis",
	"pulsar":                               "spec.pulsar",
	"scheduling.priorityclasses":           "spec.scheduling.priorityClasses",
	"scheduling.defaultpriorityclassname":  "spec.scheduling.priorityClasses",
	"scheduling.priorityclassnameoverride": "spec.scheduling.priorityClasses",
	"submission":                           "spec.scheduling.priorityClasses",
	"scheduling.pools":                     "spec.scheduling.pools",
	"application":                          "spec.executors[]",
	"kubernetes.toleratedtaints":           "spec.executors[].nodeTaint",
	"leader":                               "spec.components.scheduler.replicas",
	"uiconfig":                             "spec.ingress and spec.auth.oidc",
	"grpc.tls":                             "spec.tls",
}

// checkOwnedKeys refuses a user's config override that changes or
// removes a key the composed config cfg sets, except supportedOverrides.
// The composition owns every value of cfg that is not a non-empty object,
// by its lower-case dotted path: the ports, identities and connections the
// rest of what the function composes (Services, probes, Secrets, other
// components' configs) relies on.
func checkOwnedKeys(p *field.Path, cfg, override map[string]any) field.ErrorList {
	var errs field.ErrorList
	var walk func(p *field.Path, m map[string]any, prefix string)
	walk = func(p *field.Path, m map[string]any, prefix string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			key := prefix + strings.ToLower(k)
			if slices.Contains(supportedOverrides, key) {
				continue
			}
			owned, under := ownedAt(cfg, key)
			if sub, ok := m[k].(map[string]any); ok && !owned {
				walk(p.Child(k), sub, key+".")
				continue
			}
			if owned || under {
				errs = append(errs, field.Forbidden(p.Child(k), "the composition sets Armada's "+key+" from "+ownedKeyHint(key)+": change it there"))
			}
		}
	}
	walk(p, override, "")
	return errs
}

// ownedAt reports whether the composition owns the lower-case dotted path
// key of cfg (owned), and whether it owns a key below it (under), which an
// override of key with a non-object (or null) would replace. It follows
// only the keys of cfg on key's path, without listing every owned path; a
// key of cfg may itself hold dots.
func ownedAt(cfg map[string]any, key string) (owned, under bool) {
	for k, v := range cfg {
		sub, isMap := v.(map[string]any)
		isMap = isMap && len(sub) > 0
		eq := lowerEqualASCII
		if !isASCII(k) {
			k, eq = strings.ToLower(k), func(a, b string) bool { return a == b }
		}
		switch {
		case len(k) == len(key) && eq(k, key):
			owned = owned || !isMap
			under = under || isMap
		case len(k) > len(key) && k[len(key)] == '.' && eq(k[:len(key)], key):
			// Every path of k starts with key + ".".
			under = true
		case isMap && len(key) > len(k) && key[len(k)] == '.' && eq(k, key[:len(k)]):
			o, u := ownedAt(sub, key[len(k)+1:])
			owned, under = owned || o, under || u
		}
		if owned && under {
			break
		}
	}
	return owned, under
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerEqualASCII reports whether strings.ToLower(a) == b for an ASCII a
// as long as b, without allocating.
func lowerEqualASCII(a, b string) bool {
	for i := range len(a) {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// ownedKeyHint is the spec field an owned key comes from.
func ownedKeyHint(key string) string {
	best := ""
	for prefix := range ownedKeyHints {
		if (key == prefix || strings.HasPrefix(key, prefix+".")) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return "the component table (ports, identities and connections the Services, probes and other components rely on)"
	}
	return ownedKeyHints[best]
}
