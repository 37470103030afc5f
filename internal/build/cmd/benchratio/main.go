// Command benchratio reads `go test -bench` output on stdin, echoes it, and
// prints each benchmark's median ns/op, B/op and allocs/op over its runs,
// and the ratio of each BenchmarkRunFunction* to its BenchmarkCodecFloor*
// (a BenchmarkRunFunction*Fresh to the same floor; `make bench`): the median of the ratios of their runs paired in order,
// the i-th run of one with the i-th of the other, which make bench runs
// one after the other.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
)

func main() {
	cli.Main("benchratio", func(context.Context) error { return run(os.Stdin, os.Stdout) })
}

// result holds one benchmark's measurements over its runs, by unit.
type result map[string][]float64

func run(in io.Reader, out io.Writer) error {
	results := map[string]result{}
	var order []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		// Drop the -GOMAXPROCS suffix.
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		r, ok := results[name]
		if !ok {
			r = result{}
			results[name] = r
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r[f[i+1]] = append(r[f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var sum strings.Builder
	fmt.Fprintln(&sum, "\nmedians:")
	for _, name := range order {
		r := results[name]
		fmt.Fprintf(&sum, "  %-44s %14.0f ns/op %12.0f B/op %10.0f allocs/op", name, median(r["ns/op"]), median(r["B/op"]), median(r["allocs/op"]))
		for _, unit := range []string{"ns/executor", "ns/queue", "memo-kB/XR", "heap-goal-MB", "floor-ratio"} {
			if v, ok := r[unit]; ok {
				fmt.Fprintf(&sum, " %12.*f %s", precision(unit), median(v), unit)
			}
		}
		fmt.Fprintln(&sum)
	}
	for _, name := range order {
		floor, ok := results[floorOf(name)]
		if !strings.Contains(name, "RunFunction") || !ok {
			continue
		}
		runs, floors := results[name]["ns/op"], floor["ns/op"]
		ratios := make([]float64, 0, min(len(runs), len(floors)))
		for i := range min(len(runs), len(floors)) {
			ratios = append(ratios, runs[i]/floors[i])
		}
		fmt.Fprintf(&sum, "ratio %s / codec floor: %.2f (median of %d runs' ratios, each run with the floor's run of the same number; %.2f from the medians)\n",
			name, median(ratios), len(ratios), median(runs)/median(floors))
	}
	_, err := io.WriteString(out, sum.String())
	return err
}

// precision is the decimal places a unit's median is printed with: a
// ratio's to two.
func precision(unit string) int {
	if unit == "floor-ratio" {
		return 2
	}
	return 1
}

// floorOf names a RunFunction benchmark's codec floor: BenchmarkCodecFloorX
// for BenchmarkRunFunctionX, and the same floor for a Fresh run, which
// encodes the same response.
func floorOf(name string) string {
	return strings.TrimSuffix(strings.Replace(name, "RunFunction", "CodecFloor", 1), "Fresh")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
