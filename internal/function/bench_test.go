package function

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// productionExample is the example the function's speed is measured on.
var productionExample = testutil.Example("production.yaml")

// codecCase is one request on the wire, and the response RunFunction
// gives for it.
type codecCase struct {
	fn   *Function
	wire []byte
	rsp  *fnv1.RunFunctionResponse
}

func newCodecCase(tb testing.TB, req *fnv1.RunFunctionRequest) *codecCase {
	tb.Helper()
	servingGC(tb)
	return codecCaseOn(tb, newFunction(tb), req)
}

// codecCaseOn is newCodecCase on a given Function.
func codecCaseOn(tb testing.TB, fn *Function, req *fnv1.RunFunctionRequest) *codecCase {
	tb.Helper()
	wire, err := proto.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	rsp, err := fn.RunFunction(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	if len(rsp.GetResults()) > 0 {
		tb.Fatalf("RunFunction(...): %v", rsp.GetResults())
	}
	// The floor encodes the response as the standard encoders hold it,
	// every Struct built, not as the function writes it (its composed
	// objects' Structs already encoded).
	return &codecCase{fn: fn, wire: wire, rsp: decodedResponse(tb, rsp)}
}

// newChangedSpecCases are the production example's steady reconcile
// (converged) with the server's replicas set to n values in turn, for one
// XR (one name and UID) on one Function: Crossplane calling while a team
// edits a running Armada's claim.
func newChangedSpecCases(tb testing.TB, n int) []*codecCase {
	tb.Helper()
	servingGC(tb)
	fn := newFunction(tb)
	base := converged(tb, exampleRequest(tb, productionExample))
	cases := make([]*codecCase, n)
	for i := range cases {
		req := proto.CloneOf(base)
		spec := req.GetObserved().GetComposite().GetResource().GetFields()["spec"].GetStructValue()
		server := spec.GetFields()["components"].GetStructValue().GetFields()["server"].GetStructValue()
		if server == nil {
			tb.Fatal("the production example has no spec.components.server")
		}
		server.Fields["replicas"] = structpb.NewNumberValue(float64(3 + i))
		cases[i] = codecCaseOn(tb, fn, req)
	}
	if n > 1 && proto.Equal(cases[0].rsp, cases[1].rsp) {
		tb.Fatal("setting the server's replicas changed nothing the function composes")
	}
	return cases
}

// servingGC runs the rest of a test or benchmark with the garbage
// collector's target the served function sets (SetGCPercent: GCPercent
// unless GOGC sets one), and restores the one before after it.
func servingGC(tb testing.TB) {
	tb.Helper()
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)
	SetGCPercent()
	tb.Cleanup(func() { debug.SetGCPercent(prev) })
}

// reportHeapGoal reports the heap size at which the garbage collector
// next runs, in MB: with a live heap that stays the same between calls,
// about the heap's peak, which the collector's target trades for CPU.
func reportHeapGoal(b *testing.B) {
	b.Helper()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.NextGC)/(1<<20), "heap-goal-MB")
}

// run is one reconcile as Crossplane calls it: decode the request, compose,
// encode the response.
func (c *codecCase) run(tb testing.TB) {
	tb.Helper()
	req := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(c.wire, req); err != nil {
		tb.Fatal(err)
	}
	rsp, err := c.fn.RunFunction(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := proto.Marshal(rsp); err != nil {
		tb.Fatal(err)
	}
}

// floor only decodes the request and encodes the same response.
func (c *codecCase) floor(tb testing.TB) {
	tb.Helper()
	req := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(c.wire, req); err != nil {
		tb.Fatal(err)
	}
	if _, err := proto.Marshal(c.rsp); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRunFunction measures one reconcile of the production-like
// example, wire format in and out, as Crossplane calls it. Compare it with
// BenchmarkCodecFloor, the cost of only decoding the same request and
// encoding the same response: the ratio is what composing itself costs.
func BenchmarkRunFunction(b *testing.B) {
	c := newCodecCase(b, exampleRequest(b, productionExample))
	b.ReportAllocs()
	for b.Loop() {
		c.run(b)
	}
	reportHeapGoal(b)
}

// BenchmarkRunFunctionFresh is BenchmarkRunFunction with nothing
// remembered from earlier calls, as on an XR's first call in a process:
// its certificates are issued again (the TLS memo is the only memo, see
// BenchmarkTLS in internal/armada for issuing alone).
func BenchmarkRunFunctionFresh(b *testing.B) {
	c := newCodecCase(b, exampleRequest(b, productionExample))
	b.ReportAllocs()
	for b.Loop() {
		forgetAll(c.fn)
		c.run(b)
	}
	reportHeapGoal(b)
}

// forgetAll empties the Function's memo, as a process starting afresh
// has it.
func forgetAll(fn *Function) { fn.tls = armada.NewTLSMemo() }

// BenchmarkCodecFloor decodes the production example's request and encodes
// the response RunFunction gives for it, without composing anything.
func BenchmarkCodecFloor(b *testing.B) {
	c := newCodecCase(b, exampleRequest(b, productionExample))
	b.ReportAllocs()
	for b.Loop() {
		c.floor(b)
	}
}

// BenchmarkRunFunctionChangedSpec is BenchmarkRunFunctionConverged with
// the spec changed on every call (the server's replicas, among 8 values)
// for one XR: the TLS memo still holds the XR's certificates (their
// checks, as the steady reconcile's), nothing else is remembered.
func BenchmarkRunFunctionChangedSpec(b *testing.B) {
	inTurn(b, newChangedSpecCases(b, 8), (*codecCase).run)
	reportHeapGoal(b)
}

// BenchmarkCodecFloorChangedSpec is BenchmarkCodecFloor for the requests of
// BenchmarkRunFunctionChangedSpec.
func BenchmarkCodecFloorChangedSpec(b *testing.B) {
	inTurn(b, newChangedSpecCases(b, 8), (*codecCase).floor)
}

// inTurn runs step on each of cases in turn until the benchmark ends.
func inTurn(b *testing.B, cases []*codecCase, step func(*codecCase, testing.TB)) {
	b.Helper()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		step(cases[i%len(cases)], b)
	}
}

// BenchmarkRunFunctionConverged is BenchmarkRunFunction for a steady
// reconcile: the production example with everything it composed observed
// healthy, which is what most of Crossplane's calls look like.
func BenchmarkRunFunctionConverged(b *testing.B) {
	c := newCodecCase(b, converged(b, exampleRequest(b, productionExample)))
	b.ReportAllocs()
	for b.Loop() {
		c.run(b)
	}
	reportHeapGoal(b)
}

// BenchmarkCodecFloorConverged is BenchmarkCodecFloor for the steady
// reconcile of BenchmarkRunFunctionConverged.
func BenchmarkCodecFloorConverged(b *testing.B) {
	c := newCodecCase(b, converged(b, exampleRequest(b, productionExample)))
	b.ReportAllocs()
	for b.Loop() {
		c.floor(b)
	}
}

// BenchmarkFloorRatio reports RunFunction's CPU time per call on the
// production example over its codec floor's (floor-ratio, the median of
// interleaved rounds: the figure docs/dev/performance.md's targets are
// about), for a repeated call and for a first call with the memo empty,
// which also issues the XR's certificates. It is a benchmark, not a test:
// a ratio of times measured on a shared machine is a figure to report,
// not a pass or fail.
func BenchmarkFloorRatio(b *testing.B) {
	c := newCodecCase(b, exampleRequest(b, productionExample))
	cases := map[string]func(testing.TB){
		"Repeated": c.run,
		"Fresh": func(tb testing.TB) {
			tb.Helper()
			forgetAll(c.fn)
			c.run(tb)
		},
	}
	for name, run := range cases {
		b.Run(name, func(b *testing.B) {
			var ratio float64
			for b.Loop() {
				ratio = floorRatio(b, c, run)
			}
			b.ReportMetric(ratio, "floor-ratio")
		})
	}
}

// floorRatio is the median over interleaved rounds of RunFunction's CPU
// time per call divided by the codec floor's.
func floorRatio(t testing.TB, c *codecCase, run func(testing.TB)) float64 {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rounds = 21
	const perRound = 50 * time.Millisecond
	cost := func(f func(testing.TB), n int) time.Duration {
		runtime.GC()
		start := cpuTime(t)
		for range n {
			f(t)
		}
		return (cpuTime(t) - start) / time.Duration(n)
	}
	// Calibrate: how many calls of each take about perRound.
	iters := func(f func(testing.TB)) int {
		n := 1
		for {
			if d := cost(f, n) * time.Duration(n); d >= perRound/4 || n >= 1<<16 {
				return max(1, int(int64(n)*int64(perRound)/max(int64(d), 1)))
			}
			n *= 2
		}
	}
	runN, floorN := iters(run), iters(c.floor)
	ratios := make([]float64, 0, rounds)
	for i := range rounds {
		var runT, floor time.Duration
		if i%2 == 0 {
			runT, floor = cost(run, runN), cost(c.floor, floorN)
		} else {
			floor, runT = cost(c.floor, floorN), cost(run, runN)
		}
		ratios = append(ratios, float64(runT)/float64(max(floor, 1)))
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	t.Logf("RunFunction / codec floor (CPU time) on %s: median %.2f over %d rounds (min %.2f, max %.2f)",
		productionExample, median, rounds, ratios[0], ratios[len(ratios)-1])
	return median
}

// memoXRs is how many Armadas BenchmarkMemoFootprint composes.
const memoXRs = 40

// BenchmarkMemoFootprint reports the memory the Function keeps for each
// production-sized Armada it serves (memo-kB/XR: its TLS memo's
// certificates): the growth of the live heap, after a collection, from
// composing memoXRs Armadas, each the production example under its own
// name and UID, once each, with the memo empty before.
func BenchmarkMemoFootprint(b *testing.B) {
	fn := newFunction(b)
	reqs := distinctRequests(b, memoXRs)
	liveHeap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var perXR float64
	for b.Loop() {
		forgetAll(fn)
		before := liveHeap()
		for _, r := range reqs {
			rsp, err := fn.RunFunction(context.Background(), r)
			if err != nil || len(rsp.GetResults()) > 0 {
				b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
			}
		}
		perXR = float64(liveHeap()-before) / memoXRs / 1024
	}
	b.ReportMetric(perXR, "memo-kB/XR")
}

// distinctRequests are n copies of the production example's request,
// each for an Armada of its own name and UID.
func distinctRequests(tb testing.TB, n int) []*fnv1.RunFunctionRequest {
	tb.Helper()
	req := exampleRequest(tb, productionExample)
	reqs := make([]*fnv1.RunFunctionRequest, n)
	for i := range reqs {
		r := proto.CloneOf(req)
		meta := r.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields()
		name := fmt.Sprintf("armada-%d", i)
		meta["name"] = structpb.NewStringValue(name)
		meta["uid"] = structpb.NewStringValue(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		if labels := meta["labels"].GetStructValue(); labels != nil {
			labels.Fields["crossplane.io/claim-name"] = structpb.NewStringValue(name)
		}
		reqs[i] = r
	}
	return reqs
}
