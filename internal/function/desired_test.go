package function

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/testutil"
)

// TestSetDesiredMatchesUnstructured checks that setDesired's one-pass
// conversion composes exactly what converting through unstructured maps
// and the SDK's helpers composes, for every example, with earlier pipeline
// steps' resources and status kept.
func TestSetDesiredMatchesUnstructured(t *testing.T) {
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason  string
		desired *fnv1.State
	}{
		"NoDesiredState": {
			reason: "The first step in a pipeline starts from nothing.",
		},
		"EarlierSteps": {
			reason: "Resources, XR fields, status and connection details from earlier steps are kept.",
			desired: &fnv1.State{
				Composite: &fnv1.Resource{
					Resource: resource.MustStructJSON(`{"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "XArmada",
						"metadata": {"name": "x"}, "status": {"other": {"a": [1, 2.5, null, true, "s"]}, "version": {"observed": "old"}}}`),
					ConnectionDetails: map[string][]byte{"k": []byte("v")},
					Ready:             fnv1.Ready_READY_TRUE,
				},
				Resources: map[string]*fnv1.Resource{
					"earlier-step": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": "1"}}`), Ready: fnv1.Ready_READY_TRUE},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checked := 0
			for _, path := range paths {
				req := exampleRequestIfAny(t, path)
				if req == nil {
					continue
				}
				xr, err := decodeXR(req.GetObserved().GetComposite().GetResource().AsMap())
				if err != nil {
					t.Fatal(err)
				}
				in, errs := armada.New(xr)
				if len(errs) > 0 {
					t.Fatalf("%s: %v", path, errs)
				}
				out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("test"), "xr")})
				if err != nil {
					t.Fatal(err)
				}
				for i := range out.Objects {
					out.Objects[i].Ready = i%2 == 0
				}
				for _, ready := range []bool{true, false} {
					req.Desired = proto.CloneOf(tc.desired)
					want := response.To(req, response.DefaultTTL)
					if err := unstructuredSetDesired(req, want, out.Objects, out.Status, ready); err != nil {
						t.Fatal(err)
					}
					req.Desired = proto.CloneOf(tc.desired)
					got := response.To(req, response.DefaultTTL)
					if err := (&Function{}).setDesired(got, path, out.Objects, out.Status, ready); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
						t.Errorf("%s\n%s: setDesired(...): -unstructured, +one pass:\n%s", tc.reason, path, diff)
					}
					checked++
				}
			}
			if checked < 10 {
				t.Errorf("checked only %d renders", checked)
			}
		})
	}
}

// unstructuredSetDesired is how setDesired converted objects before it
// went straight from JSON to Structs: to an unstructured map, then through
// the SDK's request and response helpers.
func unstructuredSetDesired(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, objects []armada.Object, xrStatus any, ready bool) error {
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		return err
	}
	for _, o := range objects {
		m, err := toMap(o.Object)
		if err != nil {
			return err
		}
		delete(m, "status")
		dropNullTimestamps(m)
		c := composed.New()
		c.SetUnstructuredContent(m)
		r := resource.ReadyFalse
		if o.Ready {
			r = resource.ReadyTrue
		}
		desired[resource.Name(o.Key)] = &resource.DesiredComposed{Resource: c, Ready: r}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		return err
	}
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return err
	}
	status, err := toMap(xrStatus)
	if err != nil {
		return err
	}
	for k, v := range status {
		if err := dxr.Resource.SetValue("status."+k, v); err != nil {
			return err
		}
	}
	if !ready {
		dxr.Ready = resource.ReadyFalse
	}
	return response.SetDesiredCompositeResource(rsp, dxr)
}

func dropNullTimestamps(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			if k == "creationTimestamp" {
				delete(m, k)
			}
		case map[string]any:
			dropNullTimestamps(t)
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					dropNullTimestamps(em)
				}
			}
		}
	}
}

func toMap(s any) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// exampleRequestIfAny is exampleRequest for files that hold an ArmadaClaim.
func exampleRequestIfAny(t *testing.T, path string) *fnv1.RunFunctionRequest {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || !isArmadaExample(b) { //nolint:gosec // The repository's examples.
		return nil
	}
	return exampleRequest(t, path)
}

// TestJSONToStruct compares jsonToStruct with json.Unmarshal and
// structpb.NewStruct over random JSON documents, with and without the
// desired-object cleanup.
func TestJSONToStruct(t *testing.T) {
	// Escapes json.Marshal does not write, and whitespace.
	raw := []string{
		`{"a":"\ud83d\ude42"}`, `{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ude42\ud83d"}`, `{"a":"\u00e9\/\b\f"}`,
		` { "a" : [ 1 , { "creationTimestamp" : null } , [ { "creationTimestamp" : null } ] ] , "status" : { } } `,
		`{"a":1e400}`,
	}
	r := rand.New(rand.NewPCG(3, 4)) //nolint:gosec // Deterministic test data.
	for i := range 2000 + len(raw) {
		var b []byte
		if i < len(raw) {
			b = []byte(raw[i])
		} else {
			var err error
			if b, err = json.Marshal(randomJSONObject(r, 0)); err != nil {
				t.Fatal(err)
			}
		}
		for _, desired := range []bool{false, true} {
			m := map[string]any{}
			if err := json.Unmarshal(b, &m); err != nil {
				if _, err := jsonToStruct(b, desired); err == nil {
					t.Fatalf("case %d: jsonToStruct(%s): no error, want one as json.Unmarshal's", i, b)
				}
				continue
			}
			if desired {
				delete(m, "status")
				dropNullTimestamps(m)
			}
			want, err := structpb.NewStruct(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonToStruct(b, desired)
			if err != nil {
				t.Fatalf("case %d: jsonToStruct(%s): %v", i, b, err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("case %d: jsonToStruct(%s, %t): -want, +got:\n%s", i, b, desired, diff)
			}
		}
	}
}

func TestJSONToStructErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
	}{
		"NotAnObject":   {reason: "A Struct is an object.", in: `[1]`},
		"Trailing":      {reason: "Nothing may follow the object.", in: `{} x`},
		"Unterminated":  {reason: "An unterminated string is an error.", in: `{"a": "b`},
		"BadLiteral":    {reason: "A misspelt literal is an error.", in: `{"a": nul}`},
		"BadEscape":     {reason: "An unknown escape is an error.", in: `{"a": "\q"}`},
		"BadNumber":     {reason: "A malformed number is an error.", in: `{"a": 1-2}`},
		"MissingColon":  {reason: "A key needs a colon.", in: `{"a" 1}`},
		"MissingComma":  {reason: "Members are separated by commas.", in: `{"a": 1 "b": 2}`},
		"ArrayNotEnded": {reason: "An array must end.", in: `{"a": [1, 2`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := jsonToStruct([]byte(tc.in), false); err == nil {
				t.Errorf("%s\njsonToStruct(%s): want an error", tc.reason, tc.in)
			}
		})
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
