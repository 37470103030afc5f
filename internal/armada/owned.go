package armada

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedOverrides are the keys the composition sets that a user's
// config may still override (lower-case dotted paths). The README lists
// them beside the owned keys.
var supportedOverrides = []string{
	// The origins the browser may call from: the composition allows the
	// ingress hosts; a site may need others.
	"corsallowedorigins",
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

// ownedKeys are the lower-case dotted paths of every value in a composed
// config: the ports, identities and connections the rest of what the
// function composes (Services, probes, Secrets, other components'
// configs) relies on.
func ownedKeys(cfg map[string]any) map[string]bool {
	out := map[string]bool{}
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			p := prefix + strings.ToLower(k)
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(sub, p+".")
				continue
			}
			out[p] = true
		}
	}
	walk(cfg, "")
	return out
}

// checkOwnedKeys refuses a user's config override that changes or
// removes a key the composition owns, except supportedOverrides.
func checkOwnedKeys(p *field.Path, owned map[string]bool, override map[string]any) field.ErrorList {
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
			if owned[key] || ownsUnder(owned, key) {
				errs = append(errs, field.Forbidden(p.Child(k), "the composition sets Armada's "+key+" from "+ownedKeyHint(key)+": change it there"))
			}
		}
	}
	walk(p, override, "")
	return errs
}

// ownsUnder reports whether the composition owns a key below path, which
// an override of path with a non-object (or null) would replace.
func ownsUnder(owned map[string]bool, path string) bool {
	for k := range owned {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
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
