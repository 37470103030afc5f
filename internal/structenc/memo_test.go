package structenc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMemo(t *testing.T) {
	cases := map[string]struct {
		reason  string
		limit   int
		puts    []int
		wantLen int
		wantHit []int
	}{
		"Keeps": {
			reason:  "A Memo with room keeps every value put.",
			limit:   3,
			puts:    []int{1, 2, 3},
			wantLen: 3,
			wantHit: []int{1, 2, 3},
		},
		"Bounded": {
			reason:  "A full Memo evicts an entry for each new key: it never keeps more than its limit.",
			limit:   2,
			puts:    []int{1, 2, 3, 4, 5},
			wantLen: 2,
		},
		"SameKey": {
			reason:  "Putting a key again replaces its value without evicting another.",
			limit:   2,
			puts:    []int{1, 2, 2, 2},
			wantLen: 2,
			wantHit: []int{1, 2},
		},
		"NoRoom": {
			reason:  "A Memo with no room keeps nothing.",
			limit:   0,
			puts:    []int{1},
			wantLen: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMemo[int, string](tc.limit)
			for _, k := range tc.puts {
				m.Put(k, "v")
			}
			if diff := cmp.Diff(tc.wantLen, m.Len()); diff != "" {
				t.Errorf("%s\nLen(): -want, +got:\n%s", tc.reason, diff)
			}
			for _, k := range tc.wantHit {
				if v, ok := m.Get(k); !ok || v != "v" {
					t.Errorf("%s\nGet(%d) = %q, %v; want \"v\", true", tc.reason, k, v, ok)
				}
			}
		})
	}
	var nilMemo *Memo[int, int]
	nilMemo.Put(1, 1)
	if _, ok := nilMemo.Get(1); ok {
		t.Errorf("a nil Memo returned a value")
	}
}
