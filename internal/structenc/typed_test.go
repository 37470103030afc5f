package structenc

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"reflect"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestAppendStructRandomObjects fills every kind of object the function
// composes, and the XR status, with random values (every field, nil or
// set) and checks the walk gives what encoding/json and the decoder give.
func TestAppendStructRandomObjects(t *testing.T) {
	f := newFiller()
	trickyFiller := newFiller().SkipFieldsWithPattern(regexp.MustCompile(`^(Any|Anys|Lists|Status|Unstructured)$`))
	// The interface fields of tricky are set by hand: randfill cannot.
	r := randv2.New(randv2.NewPCG(5, 6))
	for _, newObject := range composedTypes {
		name := reflect.TypeOf(newObject()).Elem().String()
		t.Run(name, func(t *testing.T) {
			encoded := 0
			for i := range 15 {
				o := newObject()
				if tr, ok := o.(*tricky); ok {
					trickyFiller.Fill(tr)
					fillTricky(tr, r)
				} else {
					f.Fill(o)
				}
				for _, desired := range []bool{false, true} {
					wantErr, err := checkAppendStruct(t, fmt.Sprintf("%s %d", name, i), &Converter{}, o, desired)
					if (wantErr != nil) != (err != nil) {
						t.Fatalf("%s %d: AppendStruct(...): error %v, want error %v", name, i, err, wantErr)
					}
					if err == nil {
						encoded++
					}
				}
			}
			// Errors compare only as errors: most objects must encode.
			if encoded < 20 {
				t.Errorf("%s: only %d of 30 conversions succeeded", name, encoded)
			}
		})
	}
}

// composedTypes makes one empty object of each kind the function
// composes, the XR status, and tricky.
var composedTypes = []func() any{
	func() any { return &corev1.Pod{} }, func() any { return &appsv1.Deployment{} }, func() any { return &appsv1.StatefulSet{} },
	func() any { return &batchv1.Job{} }, func() any { return &corev1.Service{} }, func() any { return &corev1.Secret{} },
	func() any { return &corev1.ConfigMap{} }, func() any { return &corev1.ServiceAccount{} }, func() any { return &rbacv1.ClusterRole{} },
	func() any { return &rbacv1.ClusterRoleBinding{} }, func() any { return &rbacv1.Role{} }, func() any { return &rbacv1.RoleBinding{} },
	func() any { return &policyv1.PodDisruptionBudget{} }, func() any { return &networkingv1.Ingress{} },
	func() any { return &networkingv1.NetworkPolicy{} }, func() any { return &schedulingv1.PriorityClass{} },
	func() any { return &v1alpha1.ArmadaStatus{} }, func() any { return &tricky{} },
}

// fillTricky sets tricky's interface fields, which randfill cannot.
func fillTricky(tr *tricky, r *randv2.Rand) {
	tr.Any = randomJSONValue(r, 0)
	tr.Anys = []any{randomJSONValue(r, 0), randomJSONObject(r, 0)}
	tr.Lists = [][]map[string]any{{randomJSONObject(r, 0)}, nil}
	tr.Status = randomJSONObject(r, 0)
	tr.Unstructured = &unstructured.Unstructured{Object: randomJSONObject(r, 0)}
	tr.Raw = json.RawMessage(`{"creationTimestamp": null, "a": [1]}`)
}

// newFiller fills objects with random values; Kubernetes' types with
// their own JSON encoding get valid ones.
func newFiller() *randfill.Filler { return newSeededFiller(7) }

// newSeededFiller is newFiller with its own seed: two of the same seed
// fill equal objects.
func newSeededFiller(seed int64) *randfill.Filler {
	return randfill.New().NilChance(0.3).NumElements(0, 3).MaxDepth(12).
		RandSource(rand.NewSource(seed)).
		Funcs(
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.Format([]string{"DecimalSI", "BinarySI", "DecimalExponent"}[c.Intn(3)]))
			},
			func(i *intstr.IntOrString, c randfill.Continue) {
				if c.Intn(2) == 0 {
					*i = intstr.FromInt32(c.Int31())
					return
				}
				*i = intstr.FromString(c.String(8))
			},
			func(r *runtime.RawExtension, c randfill.Continue) {
				r.Raw = []byte(fmt.Sprintf(`{"k":%d,"creationTimestamp":null,"l":[[{"creationTimestamp":null}]]}`, c.Intn(100)))
			},
			func(tm *metav1.Time, c randfill.Continue) {
				if c.Intn(3) > 0 {
					*tm = metav1.NewTime(time.Unix(c.Int63n(1<<32), 0))
				}
			},
			func(f *metav1.FieldsV1, c randfill.Continue) {
				f.SetRawBytes(fmt.Appendf(nil, `{"f:%d":{}}`, c.Intn(100)))
			},
			func(tm *metav1.MicroTime, c randfill.Continue) {
				*tm = metav1.NewMicroTime(time.Unix(c.Int63n(1<<32), 0))
			},
		)
}

// tricky exercises encoding/json's rules beyond what Kubernetes types use.
type tricky struct {
	Embedded
	*EmbeddedPtr `json:",omitempty"`
	embeddedUnexported

	Conflict     string                     `json:"conflict"`
	Untagged     int8                       //nolint:tagliatelle // Untagged on purpose.
	Skipped      string                     `json:"-"`
	Dash         string                     `json:"-,"` //nolint:staticcheck // Names the field "-", on purpose.
	Quoted       quotedHolder               `json:"quoted"`
	Empty        string                     `json:"empty,omitempty"`
	ZeroStruct   metav1.Time                `json:"zeroStruct,omitzero"`
	ZeroPtr      *metav1.Time               `json:"zeroPtr,omitzero"`
	ZeroPlain    struct{ A int }            `json:"zeroPlain,omitzero"`
	Float32      float32                    `json:"float32"`
	Float64      float64                    `json:"float64"`
	Uint8        uint8                      `json:"uint8"`
	Uintptr      uintptr                    `json:"uintptr"`
	Bytes        []byte                     `json:"bytes"`
	Raw          json.RawMessage            `json:"raw,omitempty"`
	Array        [2]string                  `json:"array"`
	IntKeys      map[int]string             `json:"intKeys"`
	Any          any                        `json:"any"`
	Anys         []any                      `json:"anys"`
	Lists        [][]map[string]any         `json:"lists"`
	Unstructured *unstructured.Unstructured `json:"unstructured"`
	ValueMarsh   valueMarshaler             `json:"valueMarsh"`
	PtrMarsh     ptrMarshaler               `json:"ptrMarsh"`
	PtrMarshes   []ptrMarshaler             `json:"ptrMarshes"`
	MapMarsh     map[string]ptrMarshaler    `json:"mapMarsh"`
	Text         textMarshaler              `json:"text"`
	Invalid      string                     `json:"invalid\\"` //nolint:staticcheck // An invalid tag name, on purpose.
	Status       map[string]any             `json:"status"`
	Creation     *string                    `json:"creationTimestamp"`
}

// quotedHolder has a ",string" field, which the walk leaves to
// encoding/json.
type quotedHolder struct {
	N int `json:"n,string"`
}

type Embedded struct {
	Conflict string `json:"conflict"`
	Promoted string `json:"promoted"`
	Twice    string
}

type EmbeddedPtr struct {
	PtrField string `json:"ptrField"`
	Twice    string
}

type embeddedUnexported struct {
	Visible string `json:"visible"`
}

type valueMarshaler struct{ N int }

func (v valueMarshaler) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, `{"n": %d}`, v.N), nil }

type ptrMarshaler struct{ N int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `[%d, {"creationTimestamp": null}]`, p.N), nil
}

type textMarshaler struct{ S string }

func (t textMarshaler) MarshalText() ([]byte, error) { return []byte("text:" + t.S), nil }

func TestAppendStructEdgeValues(t *testing.T) {
	s := "x"
	cases := map[string]struct {
		reason string
		in     any
	}{
		"InvalidUTF8": {
			reason: "Invalid UTF-8 becomes U+FFFD in keys and values.",
			in:     map[string]any{"a\xff": "b\xfe\xfd", "l": map[string]string{"\xff": "\xfe"}},
		},
		"Numbers": {
			reason: "Numbers are float64s as their JSON text decodes.",
			in:     map[string]any{"i": math.MaxInt64, "u": uint64(math.MaxUint64), "f": float32(0.1), "n": math.Copysign(0, -1), "s": 1e-7},
		},
		"NaN": {
			reason: "NaN is encoding/json's error.",
			in:     map[string]any{"a": math.NaN()},
		},
		"NilEverything": {
			reason: "Nil pointers, maps, slices and interfaces are null.",
			in:     &tricky{Creation: nil, Any: (*int)(nil), Unstructured: nil},
		},
		"CreationTimestamp": {
			reason: "A null creationTimestamp is dropped, a set one kept.",
			in: map[string]any{
				"creationTimestamp": nil, "m": map[string]any{"creationTimestamp": &s}, "l": []any{map[string]any{"creationTimestamp": nil}},
				"ll": []any{[]any{map[string]any{"creationTimestamp": nil}}}, "typed": [][]map[string]any{{{"creationTimestamp": nil}}},
			},
		},
		"Bytes": {
			reason: "Byte slices are standard base64, nil ones null.",
			in: map[string]any{
				"data": map[string][]byte{"k": {0xfb, 0xff}, "nil": nil}, "b": []byte{0xfb, 0xff, 0xfe}, "nil": []byte(nil),
				"secret": &corev1.Secret{Data: map[string][]byte{"k": {0xfb, 0xff}}},
			},
		},
		"TopLevelUnstructured": {
			reason: "An unstructured object at the top is cleaned too.",
			in:     &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"a": 1}, "creationTimestamp": nil, "k": []any{[]any{map[string]any{"creationTimestamp": nil}}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, desired := range []bool{false, true} {
				wantErr, err := checkAppendStruct(t, tc.reason, &Converter{}, tc.in, desired)
				if fmt.Sprint(wantErr) != fmt.Sprint(err) {
					t.Fatalf("%s\nAppendStruct(...): error %v, want %v", tc.reason, err, wantErr)
				}
			}
		})
	}
}
