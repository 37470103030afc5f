package function

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// fieldPath is how a rejection names the field it is about.
var fieldPath = regexp.MustCompile(`(spec|metadata)(\.[a-zA-Z]+(\[[^\]]+\])?)*`)

// FuzzRunFunction feeds RunFunction example specs with fuzzed JSON patches
// merged in. It must never panic or return a Go error, and every rejection
// must be a Fatal result that names a field.
func FuzzRunFunction(f *testing.F) {
	all, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(all) == 0 {
		f.Fatalf("cannot find examples: %v", err)
	}
	// The ArmadaClaim and namespaced Armada examples; team queues need a target Armada.
	var examples []string
	for _, p := range all {
		if b, err := os.ReadFile(p); err == nil && isArmadaExample(b) { //nolint:gosec // The repository's examples.
			examples = append(examples, p)
		}
	}
	for i := range examples {
		f.Add(uint8(i), []byte(`{}`))
	}
	f.Add(uint8(0), []byte(`{"version":"0.0.1","executors":[{"clusterId":"A_","pool":"x"}]}`))
	f.Add(uint8(1), []byte(`{"components":{"server":{"replicas":0,"config":[1]}}}`))
	f.Add(uint8(2), []byte(`{"postgres":{"port":"x"},"redis":{"addrs":[]},"auth":{"oidc":{"providerUrl":"http://x"}}}`))
	f.Add(uint8(0), []byte(`{"scheduling":{"priorityClasses":[{"name":"a","priority":-1}],"pools":[]}}`))

	fn := newFunction(f)
	reqs := make([]*fnv1.RunFunctionRequest, len(examples))
	for i, p := range examples {
		reqs[i] = exampleRequest(f, p)
	}
	f.Fuzz(func(t *testing.T, which uint8, patch []byte) {
		var p map[string]any
		if json.Unmarshal(patch, &p) != nil {
			return
		}
		base := reqs[int(which)%len(reqs)]
		xr := base.GetObserved().GetComposite().GetResource().AsMap()
		spec, _ := xr["spec"].(map[string]any)
		maps.Copy(spec, p)
		s, err := structpb.NewStruct(xr)
		if err != nil {
			return
		}
		req := &fnv1.RunFunctionRequest{Meta: base.GetMeta(), Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}}}
		rsp, err := fn.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction(...) returned a Go error: %v", err)
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL && !fieldPath.MatchString(r.GetMessage()) {
				t.Errorf("Fatal result names no field: %q", r.GetMessage())
			}
		}
	})
}
