package function

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// TestSetDesiredReusesStructs checks that a second setDesired for the same
// XR reuses the Struct of every object that renders the same, converts
// the one that changed, and composes exactly what converting everything
// again composes.
func TestSetDesiredReusesStructs(t *testing.T) {
	f := &Function{structs: &structMemo{limit: DefaultMemoObjects}}
	req := exampleRequest(t, productionExample)
	render := func() *armada.Output {
		t.Helper()
		xr, err := decodeXR(req.GetObserved().GetComposite().GetResource().AsMap())
		if err != nil {
			t.Fatal(err)
		}
		in, errs := armada.New(xr)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("test"), "xr")})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	compose := func(xr string, out *armada.Output) *fnv1.RunFunctionResponse {
		t.Helper()
		rsp := response.To(req, response.DefaultTTL)
		if err := f.setDesired(rsp, xr, out.Objects, out.Status, out.Ready); err != nil {
			t.Fatal(err)
		}
		return rsp
	}
	first := compose("xr", render())

	second := render()
	changed := second.Objects[len(second.Objects)/2]
	changed.Object.SetLabels(map[string]string{"changed": "yes"})
	got := compose("xr", second)
	f.structs.reset()
	want := compose("xr", second)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("setDesired(...) again: -converted afresh, +with earlier Structs:\n%s", diff)
	}

	reused := 0
	for name, r := range got.GetDesired().GetResources() {
		same := r.GetResource() == first.GetDesired().GetResources()[name].GetResource()
		switch {
		case name == changed.Key && same:
			t.Errorf("%s changed, but its earlier Struct was reused", name)
		case name != changed.Key && !same:
			t.Errorf("%s rendered the same, but was converted again", name)
		case same:
			reused++
		}
	}
	if reused < 10 {
		t.Errorf("reused %d Structs, want most of the %d objects", reused, len(second.Objects))
	}
	// Another XR's objects are converted for it, not compared with these.
	other := compose("other-xr", render())
	for name, r := range other.GetDesired().GetResources() {
		if r.GetResource() == first.GetDesired().GetResources()[name].GetResource() {
			t.Errorf("%s of another XR reused this XR's Struct", name)
		}
	}
}

// TestStructMemoBounded checks the memo keeps at most its limit of
// Structs, and keeps the one put last.
func TestStructMemoBounded(t *testing.T) {
	const limit = 100
	m := &structMemo{limit: limit}
	s := &structpb.Struct{}
	o := &corev1.ConfigMap{}
	for i := range limit + 10 {
		m.put(fmt.Sprintf("xr-%d", i%7), fmt.Sprintf("o-%d", i), o, s)
		m.put(fmt.Sprintf("xr-%d", i%7), fmt.Sprintf("o-%d", i), o, s) // Again: counted once.
	}
	n := 0
	for _, byName := range m.m {
		n += len(byName)
	}
	if n != limit || m.n != limit {
		t.Errorf("memo holds %d Structs (counted %d), want %d", n, m.n, limit)
	}
	last := limit + 9
	if m.get(fmt.Sprintf("xr-%d", last%7), fmt.Sprintf("o-%d", last), o) != s {
		t.Errorf("the Struct put last is gone")
	}
}

// TestMemoObjects checks that a function converts each object once while
// its memo has room, and every time with WithMemoObjects(0).
func TestMemoObjects(t *testing.T) {
	req := exampleRequest(t, productionExample)
	cases := map[string]struct {
		reason string
		opts   []Option
		reuse  bool
	}{
		"Default": {
			reason: "By default the second call reuses every Struct of the first.",
			reuse:  true,
		},
		"None": {
			reason: "WithMemoObjects(0) converts every object on every call.",
			opts:   []Option{WithMemoObjects(0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := New(logging.NewNopLogger(), append([]Option{WithPasswordKey([]byte("test"))}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			first, err := f.RunFunction(context.Background(), proto.CloneOf(req))
			if err != nil {
				t.Fatal(err)
			}
			second, err := f.RunFunction(context.Background(), proto.CloneOf(req))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, second, protocmp.Transform()); diff != "" {
				t.Fatalf("%s\nRunFunction(...) again: -first, +second:\n%s", tc.reason, diff)
			}
			reused := 0
			for name, r := range second.GetDesired().GetResources() {
				if r.GetResource() == first.GetDesired().GetResources()[name].GetResource() {
					reused++
				}
			}
			want := 0
			if tc.reuse {
				want = len(second.GetDesired().GetResources())
			}
			if reused != want {
				t.Errorf("%s\nsecond call reused %d of %d Structs, want %d", tc.reason, reused, len(second.GetDesired().GetResources()), want)
			}
		})
	}
}

// TestStructMemoKeepsItsOwnCopy checks that changing an object after its
// Struct was kept does not make the memo take the changed object for the
// one converted.
func TestStructMemoKeepsItsOwnCopy(t *testing.T) {
	m := &structMemo{limit: 1}
	s := &structpb.Struct{}
	o := &corev1.ConfigMap{Data: map[string]string{"a": "1"}}
	m.put("xr", "cm", o, s)
	if m.get("xr", "cm", o) != s {
		t.Fatal("get(...) of the object just kept = nil, want its Struct")
	}
	o.Data["a"] = "2"
	if m.get("xr", "cm", o) != nil {
		t.Error("get(...) of the object changed after it was kept = its old Struct, want nil")
	}
	if m.get("other-xr", "cm", &corev1.ConfigMap{Data: map[string]string{"a": "1"}}) != nil {
		t.Error("get(...) for another XR = this XR's Struct, want nil")
	}
}

// TestRunFunctionConcurrent runs the production example from several
// goroutines at once, each response encoded as gRPC would while others
// reuse its Structs, and checks each is what one call alone gives (run
// with -race, which make test does, it also checks for data races).
func TestRunFunctionConcurrent(t *testing.T) {
	req := exampleRequest(t, productionExample)
	fn := newFunction(t)
	want, err := fn.RunFunction(context.Background(), proto.CloneOf(req))
	if err != nil {
		t.Fatal(err)
	}
	wantWire, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for range 3 {
				rsp, err := fn.RunFunction(context.Background(), proto.CloneOf(req))
				if err != nil {
					errs <- err
					return
				}
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(b, wantWire) {
					errs <- fmt.Errorf("a concurrent call's response differs from a single call's")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
