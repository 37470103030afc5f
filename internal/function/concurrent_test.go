package function

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestRunFunctionConcurrent runs the production example from several
// goroutines at once, each response encoded as gRPC would while others
// share its Function (and its TLS memo), and checks each is what one call
// alone gives (run with -race, which make test does, it also checks for
// data races).
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
					errs <- errors.Errorf("a concurrent call's response differs from a single call's")
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
