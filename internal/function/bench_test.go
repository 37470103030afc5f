package function

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// productionExample is the example the function's speed is measured on.
const productionExample = "../../examples/production.yaml"

// codecCase is one request on the wire, and the response RunFunction
// gives for it.
type codecCase struct {
	fn   *Function
	wire []byte
	rsp  *fnv1.RunFunctionResponse
}

func newCodecCase(tb testing.TB, req *fnv1.RunFunctionRequest) *codecCase {
	tb.Helper()
	fn := newFunction(tb)
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
	return &codecCase{fn: fn, wire: wire, rsp: rsp}
}

// run is one reconcile as Crossplane calls it: decode the request, compose,
// encode the response.
func (c *codecCase) run(tb testing.TB) {
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
}

// BenchmarkCodecFloor decodes the production example's request and encodes
// the response RunFunction gives for it, without composing anything.
func BenchmarkCodecFloor(b *testing.B) {
	c := newCodecCase(b, exampleRequest(b, productionExample))
	b.ReportAllocs()
	for b.Loop() {
		c.floor(b)
	}
}

// maxFloorRatio is how many times its codec floor RunFunction may cost
// before TestRunFunctionNearCodecFloor fails. The benchmarks show the
// ratio itself (about 2); this is a loose guard against regressions.
const maxFloorRatio = 3

// TestRunFunctionNearCodecFloor fails if RunFunction on the production
// example costs more than maxFloorRatio times its codec floor. It times
// both in short interleaved rounds on the same machine and takes the
// median of the rounds' ratios, so load on the machine slows both sides
// and a noisy round does not decide the result.
func TestRunFunctionNearCodecFloor(t *testing.T) {
	c := newCodecCase(t, exampleRequest(t, productionExample))
	const rounds = 21
	const perRound = 60 * time.Millisecond
	// Calibrate: how many floor iterations take about perRound.
	n := 1
	for {
		start := time.Now()
		for range n {
			c.floor(t)
		}
		if time.Since(start) >= perRound/4 || n >= 1<<16 {
			n = max(1, int(float64(n)*float64(perRound)/float64(max(time.Since(start), time.Microsecond))))
			break
		}
		n *= 2
	}
	timeIt := func(f func(testing.TB), iters int) time.Duration {
		start := time.Now()
		for range iters {
			f(t)
		}
		return time.Since(start) / time.Duration(iters)
	}
	// RunFunction costs a few times the floor: fewer iterations keep the
	// rounds short.
	runIters := max(1, n/3)
	ratios := make([]float64, 0, rounds)
	for i := range rounds {
		var run, floor time.Duration
		if i%2 == 0 {
			run, floor = timeIt(c.run, runIters), timeIt(c.floor, n)
		} else {
			floor, run = timeIt(c.floor, n), timeIt(c.run, runIters)
		}
		ratios = append(ratios, float64(run)/float64(floor))
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	t.Logf("RunFunction / codec floor on %s: median %.2f over %d rounds (min %.2f, max %.2f)",
		productionExample, median, rounds, ratios[0], ratios[len(ratios)-1])
	if median > maxFloorRatio {
		t.Errorf("RunFunction costs %.2f times its codec floor, want at most %d: profile BenchmarkRunFunction", median, maxFloorRatio)
	}
}
