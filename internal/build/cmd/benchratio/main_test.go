package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkRunFunction-2   	 100	 3000 ns/op	 700 B/op	 70 allocs/op
BenchmarkRunFunction-2   	 100	 2000 ns/op	 700 B/op	 70 allocs/op
BenchmarkRunFunction-2   	 100	 9000 ns/op	 700 B/op	 70 allocs/op
BenchmarkRunFunctionFresh-2   	 100	 4000 ns/op	 900 B/op	 90 allocs/op
BenchmarkRunFunctionFresh-2   	 100	 6000 ns/op	 900 B/op	 90 allocs/op
BenchmarkRunFunctionFresh-2   	 100	 3000 ns/op	 900 B/op	 90 allocs/op
BenchmarkCodecFloor-2    	 100	 1000 ns/op	 100 B/op	 10 allocs/op
BenchmarkCodecFloor-2    	 100	 2000 ns/op	 100 B/op	 10 allocs/op
BenchmarkCodecFloor-2    	 100	 1500 ns/op	 100 B/op	 10 allocs/op
BenchmarkRunFunctionQueues/100-2 	 10	 5000 ns/op	 50.00 ns/queue	 1 B/op	 1 allocs/op
BenchmarkMemoFootprint-2 	 3	 9000 ns/op	 661.4 memo-kB/XR	 2 B/op	 1 allocs/op
BenchmarkFloorRatio/Repeated-2 	 1	 2000000000 ns/op	 2.47 floor-ratio
BenchmarkFloorRatio/Repeated-2 	 1	 2000000000 ns/op	 2.31 floor-ratio
BenchmarkFloorRatio/Repeated-2 	 1	 2000000000 ns/op	 2.48 floor-ratio
PASS
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()[len(in):]
	want := `
medians:
  BenchmarkRunFunction                                   3000 ns/op          700 B/op         70 allocs/op
  BenchmarkRunFunctionFresh                              4000 ns/op          900 B/op         90 allocs/op
  BenchmarkCodecFloor                                    1500 ns/op          100 B/op         10 allocs/op
  BenchmarkRunFunctionQueues/100                         5000 ns/op            1 B/op          1 allocs/op         50.0 ns/queue
  BenchmarkMemoFootprint                                 9000 ns/op            2 B/op          1 allocs/op        661.4 memo-kB/XR
  BenchmarkFloorRatio/Repeated                     2000000000 ns/op            0 B/op          0 allocs/op         2.47 floor-ratio
ratio BenchmarkRunFunction / codec floor: 3.00 (median of 3 runs' ratios, each run with the floor's run of the same number; 2.00 from the medians)
ratio BenchmarkRunFunctionFresh / codec floor: 3.00 (median of 3 runs' ratios, each run with the floor's run of the same number; 2.67 from the medians)
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run(...): -want, +got:\n%s", diff)
	}
}
