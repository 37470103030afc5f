package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestMergeConfig(t *testing.T) {
	type args struct {
		base, override map[string]any
	}
	cases := map[string]struct {
		reason string
		args   args
		want   map[string]any
	}{
		"NoOverride": {
			reason: "Without an override the generated config is used as is.",
			args:   args{base: map[string]any{"a": 1}},
			want:   map[string]any{"a": 1},
		},
		"MapsMergeKeyByKey": {
			reason: "Nested maps merge, so a user can change one key without restating its siblings.",
			args: args{
				base:     map[string]any{"pulsar": map[string]any{"URL": "pulsar://a", "jobsetEventsTopic": "events"}},
				override: map[string]any{"pulsar": map[string]any{"URL": "pulsar://b"}},
			},
			want: map[string]any{"pulsar": map[string]any{"URL": "pulsar://b", "jobsetEventsTopic": "events"}},
		},
		"ListsReplace": {
			reason: "Lists replace wholesale, as Armada's own config loader does.",
			args: args{
				base:     map[string]any{"scheduling": map[string]any{"pools": []any{"a", "b"}}},
				override: map[string]any{"scheduling": map[string]any{"pools": []any{"c"}}},
			},
			want: map[string]any{"scheduling": map[string]any{"pools": []any{"c"}}},
		},
		"ScalarReplacesMap": {
			reason: "The user's value wins even when its type differs.",
			args:   args{base: map[string]any{"a": map[string]any{"b": 1}}, override: map[string]any{"a": "x"}},
			want:   map[string]any{"a": "x"},
		},
		"NullRemoves": {
			reason: "A null removes a generated key.",
			args:   args{base: map[string]any{"a": 1, "b": 2}, override: map[string]any{"a": nil}},
			want:   map[string]any{"b": 2},
		},
		"NewKeysAdded": {
			reason: "Keys the function does not generate are added.",
			args:   args{base: map[string]any{"a": 1}, override: map[string]any{"b": map[string]any{"c": true}}},
			want:   map[string]any{"a": 1, "b": map[string]any{"c": true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := cmp.Diff(map[string]any{}, tc.args.base)
			got := mergeConfig(tc.args.base, tc.args.override)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmergeConfig(...): -want, +got:\n%s", tc.reason, diff)
			}
			if after := cmp.Diff(map[string]any{}, tc.args.base); after != before {
				t.Errorf("%s\nmergeConfig(...) modified its base argument", tc.reason)
			}
		})
	}
}

func TestDecodeConfig(t *testing.T) {
	cases := map[string]struct {
		raw     *runtime.RawExtension
		want    map[string]any
		wantErr bool
	}{
		"Unset":     {raw: nil, want: nil},
		"Object":    {raw: &runtime.RawExtension{Raw: []byte(`{"a":{"b":1}}`)}, want: map[string]any{"a": map[string]any{"b": float64(1)}}},
		"NotObject": {raw: &runtime.RawExtension{Raw: []byte(`[1,2]`)}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeConfig(tc.raw)
			if (err != nil) != tc.wantErr {
				t.Fatalf("decodeConfig(...): error %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decodeConfig(...): -want, +got:\n%s", diff)
			}
		})
	}
}
