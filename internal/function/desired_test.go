package function

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
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
					if err := setDesired(got, out.Objects, out.Status, ready); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, decodedResponse(t, got), protocmp.Transform()); diff != "" {
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
		structenc.DropNullTimestamps(m)
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
	if b, err := os.ReadFile(path); err != nil || !isArmadaExample(b) {
		return nil
	}
	return exampleRequest(t, path)
}
