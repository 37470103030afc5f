package structenc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// standardStruct is what AppendStruct must write, by the standard path:
// encoding/json, json.Unmarshal, the desired cleanup, structpb.NewStruct
// and proto's deterministic encoding.
func standardStruct(v any, desired bool) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.Errorf("%s is no object", b)
	}
	if desired {
		delete(m, "status")
		DropNullTimestamps(m)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(s)
}

// checkAppendStruct checks that c appends what standardStruct gives for
// v, after what is in the buffer already, and nothing on an error. It
// returns both errors for the caller to compare.
func checkAppendStruct(t *testing.T, what string, c *Converter, v any, desired bool) (wantErr, err error) {
	t.Helper()
	want, wantErr := standardStruct(v, desired)
	prefix := []byte("before")
	got, err := c.AppendStruct(prefix, v, desired)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%s: AppendStruct(...) changed what was in the buffer: %q", what, got)
	}
	got = got[len(prefix):]
	if err != nil || wantErr != nil {
		if len(got) > 0 {
			t.Fatalf("%s: AppendStruct(...): error %v, and appended %d bytes", what, err, len(got))
		}
		return wantErr, err
	}
	if !bytes.Equal(want, got) {
		ws, gs := &structpb.Struct{}, &structpb.Struct{}
		werr, gerr := proto.Unmarshal(want, ws), proto.Unmarshal(got, gs)
		t.Fatalf("%s (desired %t): AppendStruct(...) differs from the standard encoding (decoding: %v, %v); -want, +got:\n%s",
			what, desired, werr, gerr, cmp.Diff(ws, gs, protocmp.Transform()))
	}
	return nil, nil
}

// TestAppendStructRandomJSON writes random JSON documents, as
// unstructured objects and plain maps, with one Converter.
func TestAppendStructRandomJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := &Converter{}
	for i := range 2000 {
		m := randomJSONObject(r, 0)
		for _, desired := range []bool{false, true} {
			for _, v := range []any{m, &unstructured.Unstructured{Object: m}} {
				if wantErr, err := checkAppendStruct(t, fmt.Sprintf("case %d", i), c, v, desired); wantErr != nil || err != nil {
					t.Fatalf("case %d: AppendStruct(...): error %v, standard error %v", i, err, wantErr)
				}
			}
		}
	}
}

// TestAppendStructEdgeEncodings covers what the encoding itself must get
// right: lengths of one, two and three bytes, empty and nested
// containers, keys that collide once made valid UTF-8, and values that
// are not objects.
func TestAppendStructEdgeEncodings(t *testing.T) {
	cases := map[string]struct {
		reason  string
		in      any
		wantErr bool
	}{
		"Lengths": {
			reason: "Content of 127, 128, 16,383 and 16,384 bytes and more takes lengths of one to three bytes.",
			in: map[string]any{
				"a": strings.Repeat("x", 125), "b": strings.Repeat("y", 126), "c": strings.Repeat("z", 16381),
				"d": map[string]any{"e": []any{strings.Repeat("w", 16382), strings.Repeat("v", 300000)}},
			},
		},
		"Empty": {
			reason: "Empty objects and lists are written, nested or not.",
			in:     map[string]any{"": map[string]any{}, "l": []any{}, "ll": []any{[]any{}, map[string]any{}}, "s": ""},
		},
		"CollidingKeys": {
			reason: "Two keys that become one when made valid UTF-8 keep the value encoding/json writes last.",
			in:     map[string]any{"a\xff": 1, "a\xfe": 2, "a\ufffd": 3, "b\xff": "x", "b\xfe": map[string]string{"\xff": "1", "\xfe": "2"}},
		},
		"NotAnObject": {
			reason:  "A Struct is an object.",
			in:      []any{1},
			wantErr: true,
		},
		"Null": {
			reason:  "A nil map is no object either.",
			in:      map[string]any(nil),
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, desired := range []bool{false, true} {
				wantErr, err := checkAppendStruct(t, tc.reason, &Converter{}, tc.in, desired)
				if (err != nil) != tc.wantErr || (wantErr != nil) != tc.wantErr {
					t.Fatalf("%s\nAppendStruct(...): error %v, standard error %v, want an error: %t", tc.reason, err, wantErr, tc.wantErr)
				}
			}
		})
	}
}

// TestConverterReuse writes, with one Converter into one buffer as the
// function does, objects whose label maps are equal, nearly equal or equal
// but for their order, and checks each is what the standard path gives.
func TestConverterReuse(t *testing.T) {
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
	c := &Converter{}
	var buf []byte
	objects := make([]any, 0, 2*3*len(labels))
	for i := range 3 * len(labels) {
		objects = append(objects,
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i % 2), Labels: labels[i%len(labels)], Annotations: labels[(i+1)%len(labels)]},
				Spec:       corev1.ServiceSpec{Selector: labels[(i+2)%len(labels)], ClusterIP: "x"},
			},
			&unstructured.Unstructured{Object: map[string]any{
				"kind":     "Thing",
				"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "1", "b": fmt.Sprint(i)}},
				"spec":     map[string]any{"selector": map[string]any{"a": float64(i)}, "match": []any{map[string]any{"b": "2"}}},
			}})
	}
	ends := make([]int, 0, len(objects))
	for i, o := range objects {
		var err error
		if buf, err = c.AppendStruct(buf, o, true); err != nil {
			t.Fatalf("object %d: AppendStruct(...): %v", i, err)
		}
		ends = append(ends, len(buf))
	}
	start := 0
	for i, o := range objects {
		want, err := standardStruct(o, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := buf[start:ends[i]]; !bytes.Equal(want, got) {
			t.Fatalf("object %d: AppendStruct(...) in a shared buffer differs from the standard encoding", i)
		}
		start = ends[i]
	}
}

// TestEncodedStruct checks that a Struct made from an encoding encodes
// as that encoding, alone and inside another message, and decodes to the
// Struct the encoding is of.
func TestEncodedStruct(t *testing.T) {
	in := map[string]any{"kind": "Thing", "spec": map[string]any{"n": 1.5, "l": []any{"a", true, nil}}}
	b, err := (&Converter{}).AppendStruct(nil, in, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := structpb.NewStruct(in)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := proto.Marshal(EncodedStruct(b))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, alone) {
		t.Errorf("proto.Marshal(EncodedStruct(b)): %q, want b %q", alone, b)
	}
	inside, err := proto.Marshal(structpb.NewStructValue(EncodedStruct(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := &structpb.Value{}
	if err := proto.Unmarshal(inside, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(structpb.NewStructValue(want), got, protocmp.Transform()); diff != "" {
		t.Errorf("a Value holding EncodedStruct(b), encoded and decoded: -want, +got:\n%s", diff)
	}
}

var jsonStrings = []string{
	"", "a", "status", "creationTimestamp", "<&>", "quote\"back\\slash/", "line\nbreak\ttab\r\b\f", "\x00\x1f",
	"ü naïve λ", "\u2028\u2029", "\xff\xfe", "emoji 🙂", "\xed\xa0\x80",
}

func randomJSONObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(5) {
		m[jsonStrings[r.IntN(len(jsonStrings))]] = randomJSONValue(r, depth+1)
	}
	return m
}

func randomJSONValue(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 4 && k < 2 {
		k += 2
	}
	switch k {
	case 0:
		return randomJSONObject(r, depth)
	case 1:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomJSONValue(r, depth+1)
		}
		return l
	case 2:
		return nil
	case 3:
		return r.IntN(2) == 0
	case 4:
		return []float64{r.Float64(), r.NormFloat64() * 1e300, 1e-320, math.MaxInt64, math.Copysign(0, -1), float64(r.IntN(1 << 20))}[r.IntN(6)]
	case 5:
		return r.Int64()
	default:
		return jsonStrings[r.IntN(len(jsonStrings))]
	}
}
