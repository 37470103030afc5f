package structenc

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// trickyYAML are strings yaml/v2 treats specially: ones that read back as
// numbers, booleans, nulls or timestamps, indicators, quotes, spaces, line
// breaks, non-ASCII and invalid UTF-8.
var trickyYAML = []string{
	"", " ", "a", "abc", "a b", " a", "a ", "y", "Y", "yes", "no", "NO", "on", "Off", "true", "False", "null", "Null", "~",
	"0", "1", "-1", "+1", "01", "0755", "0x1F", "0o17", "0b101", "-0b101", "1_000", "1.5", ".5", "-.5", "1e3", "1E+3", "1e-7",
	"1.", ".", "..", "...", "---", "--- a", "... a", "-", "- a", "-a", "a-", "?", "? a", "?a", ":", ": a", ":a", "a:", "a: b", "a:b",
	"http://x:80/p?q=1#f", "a #b", "a#b", "#a", ",a", "a,b", "[a]", "{a}", "a[0]", "&a", "*a", "!a", "|a", ">a", "'a", `"a"`,
	"a'b", `a"b`, `a\b`, "%a", "@a", "`a", "<<", "<name>.svc:50051", "2024-01-02", "2024-1-2", "2024-01-02T03:04:05Z",
	"2024-01-02 03:04:05", "1:20", "-1:20:30.5", "190:20:30", ".inf", "-.Inf", ".nan", "NaN", "Inf", "infinity",
	"5432", "0.22.7", "10.0.0.1", "v1", "1a", "a\nb", "a\n", "\na", "a \nb", "line1\nline2\n\n", "tab\there", "ü", "naïve",
	"\u2028", "\xff", strings.Repeat("x", 90), strings.Repeat("word ", 20), strings.Repeat("k", 129),
	"key with spaces and a long tail that goes past the eightieth column of the line",
}

func TestMarshalMatchesSigsYAML(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     map[string]any
		fast   bool
	}{
		"Config": {
			reason: "A generated config of maps, lists, strings, ints and bools takes the fast path.",
			in: map[string]any{
				"grpcPort": 50051, "httpPort": 8080, "corsAllowedOrigins": []string{"http://lookout.example.com"},
				"auth": map[string]any{
					"anonymousAuth": false,
					"basicAuth":     map[string]any{"users": map[string]any{"admin": map[string]any{"password": "", "groups": []string{}}}},
					"permissionGroupMapping": map[string]any{
						"submit_any_jobs": []string{"armada-admins"}, "cancel_any_jobs": []string(nil),
					},
				},
				"postgres":   map[string]any{"connection": map[string]any{"host": "pg", "port": "5432", "sslmode": "disable"}},
				"scheduling": map[string]any{"pools": []any{map[string]any{"name": "cpu"}, map[string]any{"name": "gpu"}}, "empty": map[string]any{}},
				"leader":     map[string]any{"leaderConnection": map[string]any{"armadaUrl": "<name>.armada-scheduler-headless.armada.svc:50051"}},
			},
			fast: true,
		},
		"Numbers": {
			reason: "Numbers come out as the JSON round trip makes them: integral floats as ints, large ones in exponent form.",
			in: map[string]any{
				"a": 1.0, "b": 0.5, "c": 1e20, "d": 1e19, "e": 1e21, "f": 1.5e-7, "g": 1234567.5, "h": math.Copysign(0, -1), "i": float32(0.1),
				"j": int8(-3), "k": int16(300), "l": int32(-70000), "m": int64(math.MaxInt64), "n": uint64(math.MaxUint64),
				"o": uint(7), "p": uint16(9), "q": uint32(11), "r": 123456789.0, "s": 1e-6, "t": 9.999e-7, "u": float32(1e21),
			},
			fast: true,
		},
		"NestedLists": {
			reason: "Lists in lists and maps in lists are written inline after the dash.",
			in: map[string]any{"l": []any{
				[]any{"a", []any{"b", "c"}, []any{}}, map[string]any{"x": []any{1, 2}, "y": map[string]any{"z": nil}}, map[string]any{}, nil, true,
			}},
			fast: true,
		},
		"NaturalKeyOrder": {
			reason: "Keys sort as yaml/v2 sorts them: digit runs as numbers, letters after other characters.",
			in: map[string]any{
				"a10": 1, "a9": 2, "a09": 3, "a0": 4, "a": 5, "A": 6, "_a": 7, "-a": 8, "1": 9, "10": 10, "2": 11, "a-b": 12, "a.b": 13,
				"aB": 14, "ab": 15, "x0y": 18, "x00y": 19, "": 20, "true": 21, "null": 22, "5432": 23, "pool-2": 24, "pool-10": 25,
			},
			fast: true,
		},
		"QuotedStrings": {
			reason: "Strings that would read back as something else are double-quoted, ones the emitter refuses single-quoted.",
			in: func() map[string]any {
				m := map[string]any{}
				for i, s := range trickyYAML {
					if printableASCII(s) && len(s) < 40 {
						m[fmt.Sprintf("k%03d", i)] = s
					}
				}
				return m
			}(),
			fast: true,
		},
		"OddKeysInGroups": {
			reason: "Keys are quoted like values (in small groups, which yaml/v2 orders strictly).",
			in: func() map[string]any {
				m := map[string]any{}
				for i := 0; i+3 < len(trickyYAML); i += 3 {
					g := map[string]any{}
					for _, s := range trickyYAML[i : i+3] {
						if printableASCII(s) && len(s) < 40 {
							g[s] = i
						}
					}
					m[fmt.Sprintf("g%03d", i)] = g
				}
				return m
			}(),
			fast: true,
		},
		"MultiLine": {
			reason: "Multi-line strings fall back to sigs.k8s.io/yaml and come out the same.",
			in:     map[string]any{"a": "line1\nline2\n", "b": map[string]any{"c": []any{"x\ny"}}},
		},
		"LongStringWithSpaces": {
			reason: "A long string with spaces, which yaml/v2 folds, falls back.",
			in:     map[string]any{"a": map[string]any{"b": strings.Repeat("word ", 20) + "end"}},
		},
		"LongStringWithoutSpaces": {
			reason: "A long string without spaces is never folded and takes the fast path.",
			in:     map[string]any{"a": strings.Repeat("x", 200)},
			fast:   true,
		},
		"LongKey": {
			reason: "A key over 128 bytes is a complex key in yaml/v2 and falls back.",
			in:     map[string]any{strings.Repeat("k", 129): 1},
		},
		"NonASCII": {
			reason: "Non-ASCII and invalid UTF-8 fall back.",
			in:     map[string]any{"a": "naïve", "b": "\xff"},
		},
		"OtherTypes": {
			reason: "Values of other types (structs, named types, byte slices) fall back to their JSON encoding.",
			in: map[string]any{
				"s": struct {
					A int `json:"a"`
				}{A: 1},
				"b": []byte("hi"), "m": map[string]string{"a": "b"}, "d": fmt.Stringer(nil),
			},
		},
		"Empty": {
			reason: "An empty map falls back.",
			in:     map[string]any{},
		},
		"Nil": {
			reason: "A nil map falls back.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !strictKeyOrder(tc.in) {
				t.Fatalf("%s\nthe keys are not strictly ordered by yaml/v2, so its output is not defined", tc.reason)
			}
			want, wantErr := yaml.Marshal(tc.in)
			got, err := MarshalYAML(tc.in)
			if diff := cmp.Diff(fmt.Sprint(wantErr), fmt.Sprint(err)); diff != "" {
				t.Fatalf("%s\nMarshal(...): -want err, +got err:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s\nMarshal(...): -sigs.k8s.io/yaml, +structenc:\n%s", tc.reason, diff)
			}
			if _, fast := marshalFast(tc.in); fast != tc.fast {
				t.Errorf("%s\nmarshalFast(...): fast path %t, want %t", tc.reason, fast, tc.fast)
			}
		})
	}
}

func TestMarshalDeterministicKeyOrder(t *testing.T) {
	// yaml/v2 orders these keys in a cycle (a10 < a1b < a9 < a10), so
	// sigs.k8s.io/yaml's output depends on Go's map order. Marshal's does
	// not.
	in := map[string]any{"a10": 1, "a9": 2, "a1b": 3, "a09": 4, "a01b": 5, "a0": 6}
	if strictKeyOrder(in) {
		t.Fatal("expected yaml/v2's order of these keys to be cyclic")
	}
	want, err := MarshalYAML(in)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		// A new map: Go's iteration order differs.
		m := map[string]any{}
		maps.Copy(m, in)
		got, err := MarshalYAML(m)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("MarshalYAML(...) is not deterministic: -first, +later:\n%s", diff)
		}
	}
}

// strictKeyOrder reports whether yaml/v2's key comparison is a strict
// order on the keys of every map in v; only then is its output defined.
func strictKeyOrder(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k, e := range t {
			if !strictKeyOrder(e) {
				return false
			}
			keys = append(keys, k)
		}
		for _, a := range keys {
			for _, b := range keys {
				if a != b && keyLess(a, b) == keyLess(b, a) {
					return false
				}
				for _, c := range keys {
					if keyLess(a, b) && keyLess(b, c) && !keyLess(a, c) {
						return false
					}
				}
			}
		}
	case []any:
		for _, e := range t {
			if !strictKeyOrder(e) {
				return false
			}
		}
	}
	return true
}

func TestMarshalErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     map[string]any
	}{
		"NaN":  {reason: "NaN cannot be encoded; the error is sigs.k8s.io/yaml's.", in: map[string]any{"a": math.NaN()}},
		"Inf":  {reason: "Nor can infinity.", in: map[string]any{"a": []any{math.Inf(1)}}},
		"Func": {reason: "Nor a func.", in: map[string]any{"a": func() {}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, wantErr := yaml.Marshal(tc.in)
			_, err := MarshalYAML(tc.in)
			if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
				t.Errorf("%s\nMarshal(...): err %v, want %v", tc.reason, err, wantErr)
			}
		})
	}
}

// TestMarshalRandom compares Marshal with sigs.k8s.io/yaml.Marshal over
// random configs built from trickyYAML strings, random strings and numbers.
func TestMarshalRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast, compared := 0, 0
	const n = 3000
	for i := range n {
		in := randomMap(r, 0)
		if !strictKeyOrder(in) {
			continue
		}
		compared++
		want, wantErr := yaml.Marshal(in)
		got, err := MarshalYAML(in)
		if fmt.Sprint(wantErr) != fmt.Sprint(err) {
			t.Fatalf("case %d: MarshalYAML(%#v): err %v, want %v", i, in, err, wantErr)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("case %d: MarshalYAML(%#v): -sigs.k8s.io/yaml, +structenc:\n%s", i, in, diff)
		}
		if _, ok := marshalFast(in); ok {
			fast++
		}
	}
	// The comparison means little unless most cases take the fast path.
	t.Logf("%d of %d compared, %d fast", compared, n, fast)
	if compared < n*9/10 || fast < compared/3 {
		t.Errorf("%d of %d random configs compared, %d took the fast path", compared, n, fast)
	}
}

func randomMap(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(6) + 1 {
		m[randomString(r)] = randomValue(r, depth+1)
	}
	return m
}

func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(12)
	if depth > 3 && k < 3 {
		k += 3
	}
	switch k {
	case 0:
		return randomMap(r, depth)
	case 1:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	case 2:
		l := make([]string, r.IntN(3))
		for i := range l {
			l[i] = randomString(r)
		}
		return l
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5:
		return r.IntN(100000) - 500
	case 6:
		return []float64{r.Float64(), r.NormFloat64() * 1e8, math.Pow(10, float64(r.IntN(50)-25)), float64(r.IntN(1000)), math.Copysign(0, -1)}[r.IntN(5)]
	case 7:
		return map[string]any{}
	default:
		return randomString(r)
	}
}

const alphabet = "aZ09_-.:# '\"\\/,[]{}?!&*|>%@`<=~+ey"

func randomString(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return trickyYAML[r.IntN(len(trickyYAML))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	if r.IntN(20) == 0 {
		return strings.Repeat(string(b)+" ", 8)
	}
	return string(b)
}

// FuzzMarshal compares Marshal with sigs.k8s.io/yaml.Marshal for a key and
// a string value at two depths.
func FuzzMarshal(f *testing.F) {
	for _, s := range trickyYAML {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		in := map[string]any{k: v, "n": map[string]any{k: []any{v, map[string]any{k: v}}}}
		want, wantErr := yaml.Marshal(in)
		got, err := MarshalYAML(in)
		if fmt.Sprint(wantErr) != fmt.Sprint(err) || !bytes.Equal(want, got) {
			t.Fatalf("MarshalYAML(%q): got %q, %v; want %q, %v", in, got, err, want, wantErr)
		}
	})
}

// TestAppendYAML checks that AppendYAML appends exactly what MarshalYAML
// writes after what dst holds, on the fast path (which measures columns
// from the start of the line it writes, not of dst) and the fallback, and
// that spare bytes left in a reused buffer change nothing.
func TestAppendYAML(t *testing.T) {
	long := []byte(strings.Repeat("x", 100) + "\n")
	cases := map[string]struct {
		dst  []byte
		in   map[string]any
		fast bool
	}{
		"FastEmptyDst":      {in: map[string]any{"a": map[string]any{"b": []any{"c", map[string]any{"d": 1}}}}, fast: true},
		"FastAfterLongLine": {dst: long, in: map[string]any{"a": "x y", "b": []any{"x y", map[string]any{"d": "p q"}}}, fast: true},
		"FallbackAfterText": {dst: long, in: map[string]any{"a": "multi\nline"}},
		"ReusedBuffer":      {dst: append(make([]byte, 0, 64), "leftover bytes that are not part of dst"...)[:0], in: map[string]any{"a": "b c"}, fast: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := MarshalYAML(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			want = append(append([]byte(nil), tc.dst...), want...)
			if _, fast := appendFast(append([]byte(nil), tc.dst...), tc.in); fast != tc.fast {
				t.Errorf("appendFast(%q, ...): fast path %t, want %t", tc.dst, fast, tc.fast)
			}
			got, err := AppendYAML(tc.dst, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("AppendYAML(%q, ...): -want, +got:\n%s", tc.dst, diff)
			}
		})
	}
}
