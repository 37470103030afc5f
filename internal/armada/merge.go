package armada

import (
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// mergeConfig merges override over base and returns the result; neither
// argument is modified. The rules are Armada's own (viper's) so a user's
// config behaves as it would in a --config file: maps merge key by key,
// lists and scalars replace. A null value removes the key, which a config
// file cannot do but an override sometimes needs to.
func mergeConfig(base, override map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, ov := range override {
		if ov == nil {
			delete(out, k)
			continue
		}
		om, oIsMap := ov.(map[string]any)
		bm, bIsMap := out[k].(map[string]any)
		if oIsMap && bIsMap {
			out[k] = mergeConfig(bm, om)
			continue
		}
		out[k] = ov
	}
	return out
}

// decodeConfig decodes a free-form config field. An unset field is empty.
func decodeConfig(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, errors.Wrap(err, "cannot decode config: it must be an object of Armada config keys")
	}
	return m, nil
}
