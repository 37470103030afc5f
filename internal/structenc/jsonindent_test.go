package structenc

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMarshalIndentJSON compares MarshalIndentJSON with json.MarshalIndent
// over random values: nested and empty objects and arrays, and strings
// with quotes, escapes, brackets, commas and colons.
func TestMarshalIndentJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	strs := []string{"", "a", `"`, `\`, `\"`, "{[,:]}", "line\nbreak\t", "<&>", "é\u2028", " x : y , "}
	var random func(depth int) any
	random = func(depth int) any {
		switch r := rng.IntN(8); {
		case depth < 4 && r < 2:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[strs[rng.IntN(len(strs))]] = random(depth + 1)
			}
			return m
		case depth < 4 && r < 4:
			l := []any{}
			for range rng.IntN(4) {
				l = append(l, random(depth+1))
			}
			return l
		case r == 4:
			return rng.Float64() * 1e6
		case r == 5:
			return rng.IntN(2) == 0
		case r == 6:
			return nil
		default:
			return strs[rng.IntN(len(strs))]
		}
	}
	for i := range 5000 {
		v := random(0)
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalIndentJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("case %d: MarshalIndentJSON(%v): -json.MarshalIndent, +got:\n%s", i, v, diff)
		}
	}
	// Whitespace outside strings, which json.Marshal never writes, is
	// dropped as json.Indent drops it.
	if got, want := string(appendIndentJSON(nil, []byte(" { \"a\" :\t[ 1 ,\n2 ] } "))), "{\n  \"a\": [\n    1,\n    2\n  ]\n}"; got != want {
		t.Errorf("appendIndentJSON(spaced): %q, want %q", got, want)
	}
}
