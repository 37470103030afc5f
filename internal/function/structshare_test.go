package function

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	for _, n := range numbers {
		want, got := n, d.numberValue(n).GetNumberValue()
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("numberValue(%v): %v", want, got)
		}
	}
}
