package exact

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSameEdges checks Same where equal-looking values convert
// differently, or where it must not mistake one value for another.
func TestSameEdges(t *testing.T) {
	shared := &metav1.ObjectMeta{Name: "a"}
	utc := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		a, b   any
		want   bool
	}{
		"Nils": {
			reason: "Two nils are the same.",
			want:   true,
		},
		"NilAndValue": {
			reason: "Nil is not a value.",
			a:      "",
		},
		"DifferentTypes": {
			reason: "Values of different types are different, even if they encode alike.",
			a:      int32(1), b: int64(1),
		},
		"NegativeZero": {
			reason: "0 and -0 encode differently.",
			a:      map[string]any{"n": []any{0.0}}, b: map[string]any{"n": []any{math.Copysign(0, -1)}},
		},
		"NegativeZeroTyped": {
			reason: "0 and -0 encode differently, in typed fields too.",
			a:      struct{ F float64 }{0}, b: struct{ F float64 }{math.Copysign(0, -1)},
		},
		"NilAndEmptyList": {
			reason: "A nil list is null, an empty one [].",
			a:      struct{ L []string }{}, b: struct{ L []string }{L: []string{}},
		},
		"NilAndEmptyMap": {
			reason: "A nil map is null, an empty one {}.",
			a:      struct{ M map[string]string }{}, b: struct{ M map[string]string }{M: map[string]string{}},
		},
		"NilAndEmptyBytes": {
			reason: "Nil bytes are null, empty ones \"\".",
			a:      map[string][]byte{"k": nil}, b: map[string][]byte{"k": {}},
		},
		"MissingAndZeroMember": {
			reason: "A member with a zero value is not a missing member.",
			a:      map[string]string{"a": ""}, b: map[string]string{"b": ""},
		},
		"AnyDynamicTypes": {
			reason: "An unstructured 1 and 1.0 encode alike, but are different values.",
			a:      map[string]any{"n": int64(1)}, b: map[string]any{"n": 1.0},
		},
		"AnyNilAndEmptyList": {
			reason: "An unstructured nil list is null, an empty one [].",
			a:      map[string]any{"l": []any(nil)}, b: map[string]any{"l": []any{}},
		},
		"Unstructured": {
			reason: "Equal unstructured objects are the same.",
			a:      &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": []any{"x", int64(1), true, nil}}}},
			b:      &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": []any{"x", int64(1), true, nil}}}},
			want:   true,
		},
		"UnstructuredChanged": {
			reason: "One nested value changed is a difference.",
			a:      &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": []any{"x", int64(1), true}}}},
			b:      &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": []any{"x", int64(1), false}}}},
		},
		"SharedPointer": {
			reason: "Two objects pointing at the same value are the same.",
			a:      struct{ M *metav1.ObjectMeta }{shared}, b: struct{ M *metav1.ObjectMeta }{shared},
			want: true,
		},
		"QuantityForms": {
			reason: "1 and 1000m are equal quantities, but encode differently.",
			a:      resource.MustParse("1"), b: resource.MustParse("1000m"),
		},
		"QuantitySame": {
			reason: "The same quantity parsed twice is the same.",
			a:      resource.MustParse("512Mi"), b: resource.MustParse("512Mi"),
			want: true,
		},
		"TimeSame": {
			reason: "The same instant in the same location is the same.",
			a:      metav1.NewTime(utc), b: metav1.NewTime(utc),
			want: true,
		},
		"TimeLocation": {
			reason: "The same instant in another location is a different value (a conversion may or may not tell).",
			a:      metav1.NewTime(utc), b: metav1.NewTime(utc.In(time.FixedZone("X", 3600))),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Same(tc.a, tc.b); got != tc.want {
				t.Errorf("%s\nSame(%#v, %#v) = %t, want %t", tc.reason, tc.a, tc.b, got, tc.want)
			}
			if got := Same(tc.b, tc.a); got != tc.want {
				t.Errorf("%s\nSame(%#v, %#v) = %t, want %t", tc.reason, tc.b, tc.a, got, tc.want)
			}
		})
	}
}
