package structenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestJSONToStruct compares jsonToStruct with json.Unmarshal and
// structpb.NewStruct over random JSON documents, with and without the
// desired-object cleanup.
func TestJSONToStruct(t *testing.T) {
	// Escapes json.Marshal does not write, and whitespace.
	raw := []string{
		`{"a":"\ud83d\ude42"}`, `{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ude42\ud83d"}`, `{"a":"\u00e9\/\b\f"}`,
		` { "a" : [ 1 , { "creationTimestamp" : null } , [ { "creationTimestamp" : null } ] ] , "status" : { } } `,
		`{"a":1e400}`,
	}
	r := rand.New(rand.NewPCG(3, 4)) //nolint:gosec // Deterministic test data.
	for i := range 2000 + len(raw) {
		var b []byte
		if i < len(raw) {
			b = []byte(raw[i])
		} else {
			var err error
			if b, err = json.Marshal(randomJSONObject(r, 0)); err != nil {
				t.Fatal(err)
			}
		}
		for _, desired := range []bool{false, true} {
			m := map[string]any{}
			if err := json.Unmarshal(b, &m); err != nil {
				if _, err := jsonToStruct(b, desired); err == nil {
					t.Fatalf("case %d: jsonToStruct(%s): no error, want one as json.Unmarshal's", i, b)
				}
				continue
			}
			if desired {
				delete(m, "status")
				DropNullTimestamps(m)
			}
			want, err := structpb.NewStruct(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonToStruct(b, desired)
			if err != nil {
				t.Fatalf("case %d: jsonToStruct(%s): %v", i, b, err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("case %d: jsonToStruct(%s, %t): -want, +got:\n%s", i, b, desired, diff)
			}
		}
	}
}

func TestJSONToStructErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
	}{
		"NotAnObject":   {reason: "A Struct is an object.", in: `[1]`},
		"Trailing":      {reason: "Nothing may follow the object.", in: `{} x`},
		"Unterminated":  {reason: "An unterminated string is an error.", in: `{"a": "b`},
		"BadLiteral":    {reason: "A misspelt literal is an error.", in: `{"a": nul}`},
		"BadEscape":     {reason: "An unknown escape is an error.", in: `{"a": "\q"}`},
		"BadNumber":     {reason: "A malformed number is an error.", in: `{"a": 1-2}`},
		"MissingColon":  {reason: "A key needs a colon.", in: `{"a" 1}`},
		"MissingComma":  {reason: "Members are separated by commas.", in: `{"a": 1 "b": 2}`},
		"ArrayNotEnded": {reason: "An array must end.", in: `{"a": [1, 2`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := jsonToStruct([]byte(tc.in), false); err == nil {
				t.Errorf("%s\njsonToStruct(%s): want an error", tc.reason, tc.in)
			}
		})
	}
}

var jsonStrings = []string{
	"", "a", "status", "creationTimestamp", "<&>", "quote\"back\\slash/", "line\nbreak\ttab\r\b\f", "\x00\x1f",
	"ü naïve λ", "\u2028\u2029", "\xff\xfe", "emoji 🙂", "\xed\xa0\x80",
}

func randomJSONObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(5) {
		m[jsonStrings[r.IntN(len(jsonStrings))]] = randomJSONValue(r, depth+1)
	}
	return m
}

func randomJSONValue(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 4 && k < 2 {
		k += 2
	}
	switch k {
	case 0:
		return randomJSONObject(r, depth)
	case 1:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomJSONValue(r, depth+1)
		}
		return l
	case 2:
		return nil
	case 3:
		return r.IntN(2) == 0
	case 4:
		return []float64{r.Float64(), r.NormFloat64() * 1e300, 1e-320, math.MaxInt64, math.Copysign(0, -1), float64(r.IntN(1 << 20))}[r.IntN(6)]
	case 5:
		return r.Int64()
	default:
		return jsonStrings[r.IntN(len(jsonStrings))]
	}
}
