package structenc

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the JSON encoding of an unstructured value (what
// structpb's AsMap gives: maps, slices, strings, float64s, bools and nil)
// to b, as encoding/json would encode it for decoding: map keys sorted, so
// that a decode reports the same first error, and numbers in
// encoding/json's text, which is what typed fields and Quantities parse.
// It reports false for anything else (another type, invalid UTF-8,
// infinities, NaN), which the caller leaves to encoding/json.
func AppendJSON(b []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return appendJSONString(b, t)
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return b, false
		}
		if t == math.Trunc(t) && math.Abs(t) < 1e21 {
			return strconv.AppendFloat(b, t, 'f', -1, 64), true
		}
		// Fractions and exponents are rare in a spec: encoding/json
		// writes them.
		j, err := json.Marshal(t)
		return append(b, j...), err == nil
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = AppendJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSONString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = AppendJSON(b, t[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, everything else as it is.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	b = append(b, '"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"'), true
}
