package armada

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEncodeMemo checks that the memo returns what encoding returns:
// the kept bytes for a value exactly the same as the one encoded under
// the key, and a new encoding for any other value, under the same key or
// another.
func TestEncodeMemo(t *testing.T) {
	type value struct {
		Name  string   `json:"name"`
		Items []string `json:"items"`
	}
	calls := 0
	enc := func(v value) ([]byte, error) {
		calls++
		return json.Marshal(v)
	}
	var m encodeMemo[value, []byte]
	steps := []struct {
		key       string
		v         value
		wantCalls int
	}{
		{key: "a", v: value{Name: "x", Items: []string{"1"}}, wantCalls: 1},
		{key: "a", v: value{Name: "x", Items: []string{"1"}}, wantCalls: 1},
		{key: "a", v: value{Name: "x", Items: []string{"2"}}, wantCalls: 2},
		{key: "a", v: value{Name: "x", Items: []string{}}, wantCalls: 3},
		{key: "a", v: value{Name: "x"}, wantCalls: 4},
		{key: "b", v: value{Name: "x"}, wantCalls: 5},
		{key: "b", v: value{Name: "x"}, wantCalls: 5},
		{key: "a", v: value{Name: "y"}, wantCalls: 6},
	}
	for i, s := range steps {
		got, err := m.encode(s.key, s.v, enc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(s.v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("step %d: encode(%q, %+v): -want, +got:\n%s", i, s.key, s.v, diff)
		}
		if calls != s.wantCalls {
			t.Errorf("step %d: encode(%q, %+v): %d encodings so far, want %d", i, s.key, s.v, calls, s.wantCalls)
		}
	}
}

// TestEncodeMemoBounded checks the memo keeps at most encodeMemoSize
// entries, and keeps the one put last.
func TestEncodeMemoBounded(t *testing.T) {
	var m encodeMemo[int, []byte]
	enc := func(v int) ([]byte, error) { return []byte(fmt.Sprint(v)), nil }
	for i := range encodeMemoSize + 10 {
		if _, err := m.encode(fmt.Sprint(i), i, enc); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.m) != encodeMemoSize {
		t.Errorf("memo holds %d entries, want %d", len(m.m), encodeMemoSize)
	}
	if _, ok := m.m[fmt.Sprint(encodeMemoSize+9)]; !ok {
		t.Error("the entry put last is gone")
	}
}

// TestRenderWithMemos renders one installation through a series of random
// edits and checks each render is what it is with the encoding memos
// empty.
func TestRenderWithMemos(t *testing.T) {
	reset := func() {
		dashboardJSONs.reset()
		configYAMLs.reset()
	}
	reset()
	t.Cleanup(reset)
	rng := rand.New(rand.NewPCG(3, 4)) //nolint:gosec // Deterministic test data.
	s := randomSpec(rng)
	for i := range 40 {
		if i%3 != 0 { // Every third render repeats the last spec.
			s = edit(rng, s)
		}
		in, errs := New(claimed(s))
		if len(errs) > 0 {
			continue
		}
		opt := Options{Rand: KeyedRand([]byte("test"), "xr")}
		got, errGot := Render(in, opt)
		reset()
		want, errWant := Render(in, opt)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("render %d: Render(...) with memos: %v, without: %v", i, errGot, errWant)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("render %d: Render(...): -without memos, +with:\n%s", i, diff)
		}
	}
}
