package function

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/simulate"
)

// scaledRequest is the production example's request with n executors or n
// queues (what is not scaled stays as the example has it), converged.
func scaledRequest(tb testing.TB, executors, queues int) *fnv1.RunFunctionRequest {
	tb.Helper()
	req := exampleRequest(tb, productionExample)
	xr := req.GetObserved().GetComposite().GetResource().AsMap()
	spec, ok := xr["spec"].(map[string]any)
	if !ok {
		tb.Fatal("the example has no spec")
	}
	if executors > 0 {
		l := make([]any, executors)
		for i := range l {
			l[i] = map[string]any{"clusterId": fmt.Sprintf("cluster-%03d", i)}
		}
		spec["executors"] = l
	}
	if queues > 0 {
		l := make([]any, queues)
		for i := range l {
			l[i] = map[string]any{"name": fmt.Sprintf("team-%03d", i), "priorityFactor": "1", "groupOwners": []any{"platform-team"}}
		}
		spec["queues"] = l
	}
	s, err := structpb.NewStruct(xr)
	if err != nil {
		tb.Fatal(err)
	}
	req.Observed.Composite.Resource = s
	return converged(tb, req)
}

// converged feeds RunFunction's composed resources back to it as observed,
// with the status a healthy cluster reports (Jobs complete, workloads
// available), until it composes nothing new: the request of a steady
// reconcile, which composes everything, queues included.
func converged(tb testing.TB, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionRequest {
	tb.Helper()
	fn := newFunction(tb)
	var keys []string
	for range 10 {
		rsp, err := fn.RunFunction(context.Background(), proto.CloneOf(req))
		if err != nil || len(rsp.GetResults()) > 0 {
			tb.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
		observed := map[string]*fnv1.Resource{}
		for name, r := range rsp.GetDesired().GetResources() {
			u := &unstructured.Unstructured{Object: r.GetResource().AsMap()}
			if status, ok := simulate.HealthyStatus(u, time.Time{}); ok {
				u.Object["status"] = status
			}
			s, err := structpb.NewStruct(u.Object)
			if err != nil {
				tb.Fatal(err)
			}
			observed[name] = &fnv1.Resource{Resource: s}
		}
		xr := req.GetObserved().GetComposite().GetResource().AsMap()
		xr["status"] = rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
		s, err := structpb.NewStruct(xr)
		if err != nil {
			tb.Fatal(err)
		}
		req = &fnv1.RunFunctionRequest{Meta: req.GetMeta(), Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}, Resources: observed}}
		next := slices.Sorted(maps.Keys(observed))
		if slices.Equal(keys, next) {
			return req
		}
		keys = next
	}
	tb.Fatal("RunFunction did not converge in 10 reconciles")
	return nil
}

// BenchmarkRunFunctionExecutors measures RunFunction on the production
// example with 1, 10 and 100 executors; ns/executor is ns/op divided by
// the executors, so a linear cost shows as a falling, levelling figure
// and the marginal cost is the difference between sizes.
func BenchmarkRunFunctionExecutors(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchmarkScaled(b, scaledRequest(b, n, 0), n, "ns/executor")
		})
	}
}

// BenchmarkRunFunctionQueues measures RunFunction on the production
// example with 1, 100 and 256 queues.
func BenchmarkRunFunctionQueues(b *testing.B) {
	for _, n := range []int{1, 100, 256} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchmarkScaled(b, scaledRequest(b, 0, n), n, "ns/queue")
		})
	}
}

func benchmarkScaled(b *testing.B, req *fnv1.RunFunctionRequest, n int, unit string) {
	b.Helper()
	c := newCodecCase(b, req)
	b.ReportAllocs()
	for b.Loop() {
		c.run(b)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), unit)
}
