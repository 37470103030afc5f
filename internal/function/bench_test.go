package function

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// BenchmarkRunFunction measures one reconcile of the production-like
// example, wire format in and out, as Crossplane calls it. Compare it with
// BenchmarkCodecFloor, the cost of only decoding the same request and
// encoding the same response: the ratio is what composing itself costs.
func BenchmarkRunFunction(b *testing.B) {
	fn := newFunction(b)
	wire, err := proto.Marshal(exampleRequest(b, "../../examples/production.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(wire, req); err != nil {
			b.Fatal(err)
		}
		rsp, err := fn.RunFunction(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(rsp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecFloor decodes the production example's request and encodes
// the response RunFunction gives for it, without composing anything.
func BenchmarkCodecFloor(b *testing.B) {
	fn := newFunction(b)
	req := exampleRequest(b, "../../examples/production.yaml")
	wire, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	rsp, err := fn.RunFunction(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(wire, r); err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(rsp); err != nil {
			b.Fatal(err)
		}
	}
}
