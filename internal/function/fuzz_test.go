package function

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// patchedField matches a rejection that names a field under one of the
// patched spec keys: the examples are valid, so whatever is refused is
// refused because of the patch. Keys match in any case, as encoding/json
// decodes them (the API server would have pruned a key in another case).
func patchedField(patch map[string]any) *regexp.Regexp {
	keys := make([]string, 0, len(patch))
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	return regexp.MustCompile(`(^|[^.\w])spec\.((?i)` + strings.Join(keys, "|") + `)([.\[:]|$)`)
}

// FuzzRunFunction feeds RunFunction example specs with fuzzed JSON patches
// merged in. It must never panic or return a Go error, and every rejection
// must be a Fatal result that names a field under a patched key.
func FuzzRunFunction(f *testing.F) {
	all, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(all) == 0 {
		f.Fatalf("cannot find examples: %v", err)
	}
	// The ArmadaClaim and namespaced Armada examples; team queues need a target Armada.
	var examples []string
	for _, p := range all {
		if b, err := os.ReadFile(p); err == nil && isArmadaExample(b) {
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
		req := &fnv1.RunFunctionRequest{Meta: base.GetMeta(), Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}}, RequiredResources: base.GetRequiredResources()}
		rsp, err := fn.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction(...) returned a Go error: %v", err)
		}
		named := patchedField(p)
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL && !named.MatchString(r.GetMessage()) {
				t.Errorf("Fatal result names no field under the patched spec keys %v: %q", slices.Sorted(maps.Keys(p)), r.GetMessage())
			}
		}
	})
}
