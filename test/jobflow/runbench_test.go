package jobflow

import (
	"regexp"
	"slices"
	"testing"
	"time"
)

// printedReady and printedSubmit find, in make run's output, how long the
// claim took to become Ready once its pods could run (after the runner
// started, on KWOK; after the node started, on the real node) and the
// demo job's submit → Succeeded.
var (
	printedReady  = regexp.MustCompile(`is Ready \(([0-9.hms]+) after the (?:runner|node) started\)`)
	printedSubmit = regexp.MustCompile(`submit → Succeeded in ([0-9.hms]+);`)
)

// BenchmarkMakeRun runs make run's command to the demo job on KWOK
// (Armada's binaries as processes, jobs on KWOK Nodes) and on the real
// node (-node: every pod a container) in turn, each iteration both, and
// reports the medians of each arm's claim Ready (from when its pods could
// run) and demo job submit → Succeeded, and their ratios, node over KWOK.
// Each run is minutes long: run it with -benchtime 1x (make bench-run), or
// Nx for more samples; not part of make test.
func BenchmarkMakeRun(b *testing.B) {
	arms := []struct {
		name string
		args []string
	}{{"kwok", []string{"-exit-after-demo"}}, {"node", []string{"-node", "-exit-after-demo"}}}
	ready := map[string][]time.Duration{}
	submit := map[string][]time.Duration{}
	for b.Loop() {
		for _, arm := range arms {
			r := startMakeRun(b, arm.args...)
			if err := <-r.exited; err != nil {
				b.Fatalf("make run %v: %v; output:\n%s", arm.args, err, r.output())
			}
			out := r.output()
			rm, sm := printedReady.FindStringSubmatch(out), printedSubmit.FindStringSubmatch(out)
			if rm == nil || sm == nil {
				b.Fatalf("make run %v printed no Ready time (%q) or no submit → Succeeded (%q); output:\n%s", arm.args, printedReady, printedSubmit, out)
			}
			rd, err1 := time.ParseDuration(rm[1])
			sd, err2 := time.ParseDuration(sm[1])
			if err1 != nil || err2 != nil {
				b.Fatalf("cannot parse %q or %q", rm[1], sm[1])
			}
			ready[arm.name] = append(ready[arm.name], rd)
			submit[arm.name] = append(submit[arm.name], sd)
			b.Logf("%s: claim Ready %s after its pods could run, demo job submit → Succeeded %s", arm.name, rd, sd)
		}
	}
	for _, arm := range arms {
		b.ReportMetric(median(ready[arm.name]).Seconds(), "s-ready-"+arm.name)
		b.ReportMetric(median(submit[arm.name]).Seconds(), "s-job-"+arm.name)
	}
	b.ReportMetric(median(ready["node"]).Seconds()/median(ready["kwok"]).Seconds(), "ready-node/kwok")
	b.ReportMetric(median(submit["node"]).Seconds()/median(submit["kwok"]).Seconds(), "job-node/kwok")
}

// median is the middle of ds (the upper middle of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
