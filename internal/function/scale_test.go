package function

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// scale is what scaledRequest changes in the production example.
type scale struct {
	// Executors replace the example's, if not zero.
	Executors int
	// Remote puts every executor in its own worker cluster (a
	// ClusterProviderConfig each), dialing spec.executorApi.url.
	Remote bool
	// Queues replace the example's, if not zero.
	Queues int
}

// scaledRequest is the production example's request scaled as s says
// (what is not scaled stays as the example has it), converged.
func scaledRequest(tb testing.TB, s scale) *fnv1.RunFunctionRequest {
	tb.Helper()
	req := exampleRequest(tb, productionExample)
	xr := req.GetObserved().GetComposite().GetResource().AsMap()
	spec, ok := xr["spec"].(map[string]any)
	if !ok {
		tb.Fatal("the example has no spec")
	}
	if s.Executors > 0 {
		l := make([]any, s.Executors)
		for i := range l {
			e := map[string]any{"clusterId": fmt.Sprintf("cluster-%03d", i)}
			if s.Remote {
				e["cluster"] = map[string]any{"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": fmt.Sprintf("worker-%03d", i)}}
			}
			l[i] = e
		}
		spec["executors"] = l
	}
	if s.Remote {
		spec["executorApi"] = map[string]any{
			"url":         "armada-executor-api.example.com:443",
			"caSecretRef": map[string]any{"name": "armada-executor-api-ca", "key": "ca.crt"},
		}
	}
	if queues := s.Queues; queues > 0 {
		l := make([]any, queues)
		for i := range l {
			l[i] = map[string]any{"name": fmt.Sprintf("team-%03d", i), "priorityFactor": "1", "groupOwners": []any{"platform-team"}}
		}
		spec["queues"] = l
	}
	st, err := structpb.NewStruct(xr)
	if err != nil {
		tb.Fatal(err)
	}
	req.Observed.Composite.Resource = st
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
		rsp, err := runFunction(tb, fn, proto.CloneOf(req))
		if err != nil || len(rsp.GetResults()) > 0 {
			tb.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
		observed := map[string]*fnv1.Resource{}
		oxr := &unstructured.Unstructured{Object: req.GetObserved().GetComposite().GetResource().AsMap()}
		for name, r := range rsp.GetDesired().GetResources() {
			u := &unstructured.Unstructured{Object: r.GetResource().AsMap()}
			simulate.AsCreated(u, time.Time{})
			// Crossplane sets the XR's controller reference on everything it applies.
			u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(oxr, oxr.GroupVersionKind())})
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
			benchmarkScaled(b, scaledRequest(b, scale{Executors: n}), n, "ns/executor")
		})
	}
}

// BenchmarkRunFunctionRemoteExecutors is BenchmarkRunFunctionExecutors
// with every executor in its own worker cluster: each composes a dozen
// provider-kubernetes Objects (its workload, identity, RBAC, config, and
// its cluster's namespace, ClusterRole, CA and PriorityClasses), all
// observed Ready with the worker's objects healthy, as in a steady
// reconcile.
func BenchmarkRunFunctionRemoteExecutors(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchmarkScaled(b, scaledRequest(b, scale{Executors: n, Remote: true}), n, "ns/executor")
		})
	}
}

// BenchmarkRunFunctionQueues measures RunFunction on the production
// example with 1, 100 and 256 queues.
func BenchmarkRunFunctionQueues(b *testing.B) {
	for _, n := range []int{1, 100, 256} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchmarkScaled(b, scaledRequest(b, scale{Queues: n}), n, "ns/queue")
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
	reportHeapGoal(b)
}
