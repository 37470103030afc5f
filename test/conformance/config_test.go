package conformance

import (
	"regexp"
	"sort"
	"strings"
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
