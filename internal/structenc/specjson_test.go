package structenc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAppendJSON checks AppendJSON's output decodes exactly as
// encoding/json's does: the same value, and numbers with the same text.
func TestAppendJSON(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     any
		ok     bool
	}{
		"Numbers": {
			reason: "Integral numbers are written as encoding/json writes them, others by encoding/json.",
			in:     map[string]any{"a": 1.0, "b": 5432.0, "c": 1e20, "d": 1e21, "e": 0.5, "f": 1e-7, "g": math.Copysign(0, -1), "h": 123456789.0, "i": float64(math.MaxInt64)},
			ok:     true,
		},
		"Strings": {
			reason: "Quotes, backslashes and control characters are escaped.",
			in:     map[string]any{"a": "q\"b\\c\nd\te\x01<>&ü\u2028", "": ""},
			ok:     true,
		},
		"Nested": {
			reason: "Maps and lists nest.",
			in:     map[string]any{"l": []any{nil, true, false, map[string]any{"z": 1.0, "a": []any{}}}, "m": map[string]any{}},
			ok:     true,
		},
		"InvalidUTF8": {reason: "Invalid UTF-8 is left to encoding/json.", in: map[string]any{"a": "\xff"}},
		"NaN":         {reason: "NaN is left to encoding/json.", in: map[string]any{"a": math.NaN()}},
		"OtherType":   {reason: "Other types are left to encoding/json.", in: map[string]any{"a": 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := AppendJSON(nil, tc.in)
			if ok != tc.ok {
				t.Fatalf("%s\nappendJSON(...): ok %t, want %t", tc.reason, ok, tc.ok)
			}
			if !ok {
				return
			}
			want, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodeNumbers(t, want), decodeNumbers(t, got)); diff != "" {
				t.Errorf("%s\nappendJSON(...): -encoding/json, +AppendJSON:\n%s", tc.reason, diff)
			}
		})
	}
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		in := randomJSONObject(r, 0)
		// Round trip through JSON: AsMap's types only.
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var m any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got, ok := AppendJSON(nil, m)
		if !ok {
			t.Fatalf("case %d: AppendJSON(%s): not ok", i, b)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(decodeNumbers(t, want), decodeNumbers(t, got)); diff != "" {
			t.Fatalf("case %d: AppendJSON(...): -encoding/json, +AppendJSON:\n%s", i, diff)
		}
	}
}

// decodeNumbers decodes JSON keeping numbers' text.
func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("cannot decode %s: %v", b, err)
	}
	return v
}
