package armada

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderWithTLSMemo renders one installation through a series of
// random edits, with one TLSMemo throughout, and checks each render is
// what it is without a memo. Every third render repeats the spec before,
// so the memo's certificates are reused.
func TestRenderWithTLSMemo(t *testing.T) {
	memo := NewTLSMemo()
	rng := rand.New(rand.NewPCG(3, 4))
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
		want, errWant := Render(in, opt)
		opt.TLSMemo = memo
		got, errGot := Render(in, opt)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("render %d: Render(...) with the memo: %v, without: %v", i, errGot, errWant)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("render %d: Render(...): -without the memo, +with:\n%s", i, diff)
		}
	}
	if memo.Len() == 0 {
		t.Errorf("the TLSMemo kept nothing: the renders did not use it")
	}
}
