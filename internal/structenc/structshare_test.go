package structenc

import (
	"encoding/base64"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSharedValues converts, with one decoder as setDesired does, objects
// whose label maps, strings and numbers are equal, nearly equal or equal
// but for their order, and checks each object is what encoding/json
// gives, however much the decoder shares between them.
func TestSharedValues(t *testing.T) {
	labels := []map[string]string{
		{"a": "1", "b": "2"},
		{"b": "2", "a": "1"},
		{"a": "2", "b": "1"},
		{"a": "1", "b": "2", "c": ""},
		{"a": "1"},
		{},
		nil,
		{"a": "1", "b": "2\xff"},
		{"b": "1", "a": "2"},
	}
	numbers := []float64{0, math.Copysign(0, -1), 1, 0, math.Copysign(0, -1)}
	d := &structDecoder{}
	for i := range 3 * len(labels) {
		o := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i % 2), Labels: labels[i%len(labels)], Annotations: labels[(i+1)%len(labels)]},
			Spec:       corev1.ServiceSpec{Selector: labels[(i+2)%len(labels)], ClusterIP: "x"},
		}
		for _, desired := range []bool{false, true} {
			want, err := viaJSONText(o, desired)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.typedToStruct(o, desired)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("object %d (desired %t): typedToStruct(...): -encoding/json, +shared:\n%s", i, desired, diff)
			}
		}
	}
	// Unstructured objects' string maps share too; a map with another
	// value does not.
	anyLabels := []map[string]any{{"a": "1", "b": "2"}, {"b": "2", "a": "1"}, {"a": "1", "b": 2.0}, {"a": "1", "b": "2\xff"}, {"a": "2", "b": "1"}}
	for i := range 2 * len(anyLabels) {
		o := &unstructured.Unstructured{Object: map[string]any{
			"kind":     "Thing",
			"metadata": map[string]any{"name": "x", "labels": anyLabels[i%len(anyLabels)]},
			"spec":     map[string]any{"selector": anyLabels[(i+1)%len(anyLabels)], "match": []any{anyLabels[(i+2)%len(anyLabels)]}},
		}}
		want, err := viaJSONText(o, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.typedToStruct(o, true)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Fatalf("unstructured object %d: typedToStruct(...): -encoding/json, +shared:\n%s", i, diff)
		}
	}
	for _, n := range numbers {
		want, got := n, d.numberValue(n).GetNumberValue()
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("numberValue(%v): %v", want, got)
		}
	}
}

// TestSameStrings checks the comparison that decides whether a string
// map shares a converted one whose hash it matches.
func TestSameStrings(t *testing.T) {
	d := &structDecoder{}
	converted := d.structValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"a": d.stringValue("1"), "b": d.stringValue("2"),
	}}).GetStructValue().GetFields()
	withNumber := map[string]*structpb.Value{"a": d.stringValue("1"), "b": d.numberValue(2)}
	cases := map[string]struct {
		fields map[string]*structpb.Value
		m      map[string]string
		want   bool
	}{
		"Equal":         {fields: converted, m: map[string]string{"b": "2", "a": "1"}, want: true},
		"OtherValue":    {fields: converted, m: map[string]string{"a": "1", "b": "1"}},
		"OtherKey":      {fields: converted, m: map[string]string{"a": "1", "c": "2"}},
		"Fewer":         {fields: converted, m: map[string]string{"a": "1"}},
		"More":          {fields: converted, m: map[string]string{"a": "1", "b": "2", "c": "3"}},
		"NotAString":    {fields: withNumber, m: map[string]string{"a": "1", "b": "2"}},
		"BothEmpty":     {fields: map[string]*structpb.Value{}, m: nil, want: true},
		"EmptyAndOther": {fields: map[string]*structpb.Value{}, m: map[string]string{"a": "1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sameStrings(tc.fields, tc.m, stringOf); got != tc.want {
				t.Errorf("sameStrings(...): %t, want %t", got, tc.want)
			}
		})
	}
}

// TestBase64String compares base64String with base64.StdEncoding over
// every length around its chunk size.
func TestBase64String(t *testing.T) {
	b := make([]byte, 2500)
	for i := range b {
		b[i] = byte(i * 7)
	}
	for n := range b {
		if got, want := base64String(b[:n]), base64.StdEncoding.EncodeToString(b[:n]); got != want {
			t.Fatalf("base64String(%d bytes): %q, want %q", n, got, want)
		}
	}
}
