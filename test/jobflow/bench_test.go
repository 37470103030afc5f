package jobflow

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// benchBatch is how many jobs one armadactl submit carries.
const benchBatch = 100

// tenNodes are the KWOK Nodes BenchmarkJobFlow's jobs run on.
func tenNodes() []controlplane.Node {
	nodes := make([]controlplane.Node, 10)
	for i := range nodes {
		nodes[i] = controlplane.Node{Name: fmt.Sprintf("kwok-node-%d", i+1), CPU: "16", Memory: "64Gi"}
	}
	return nodes
}

// BenchmarkJobFlow runs 100 and 1,000 one-second jobs through a composed
// Armada on 10 KWOK Nodes (make bench-jobflow; run it with -benchtime 1x)
// and reports: claim applied → first job Succeeded, submit → Succeeded
// p50 and p95 (each job from just before the armadactl submit that
// carried it to its Succeeded event's own timestamp), jobs per minute
// (jobs over first submit → last Succeeded), and each process's resident
// memory at the end. Then, unless BENCH_LOCALDEV=0, it stops the composed
// Armada and runs the same jobs through the same binaries in Armada's own
// local-development configuration (runLocalDev) on the same backends,
// cluster and Nodes, reporting the same figures (suffix -localdev) and
// the ratio of jobs per minute, composed over localdev. It fails if any
// job does not succeed.
func BenchmarkJobFlow(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			f := compose(b, composeOptions{nodes: tenNodes()})
			composed := benchArm{a: f.a, user: "admin", password: f.claim.Credential("admin"), queue: queue}
			round := 0
			var r jobRun
			for b.Loop() {
				round++
				r = runJobs(b, composed, fmt.Sprintf("bench-%d-%d", n, round), n)
				if round == 1 {
					b.ReportMetric(r.firstSucceeded.Sub(f.applied).Seconds(), "s-apply-to-first-succeeded")
				}
				b.ReportMetric(r.p50.Seconds(), "s-p50")
				b.ReportMetric(r.p95.Seconds(), "s-p95")
				b.ReportMetric(r.perMinute, "jobs/min")
				b.Logf("composed: %d jobs: submit → Succeeded p50 %s, p95 %s; %.0f jobs/min; apply → first Succeeded %s",
					n, r.p50.Round(time.Millisecond), r.p95.Round(time.Millisecond), r.perMinute, r.firstSucceeded.Sub(f.applied).Round(time.Second))
			}
			table, rss := memoryTable(b, f, nil)
			reportRSS(b, "composed", rss)
			b.Logf("composed: resident memory at the end (MiB, a process with its children; shared pages counted in each):\n%s", table)
			if os.Getenv("BENCH_LOCALDEV") == "0" {
				return
			}
			// The second arm: the same binaries in Armada's own
			// local-development configuration, on the same backends,
			// cluster and Nodes, once the composed Armada is stopped.
			l := runLocalDev(b, f, n)
			b.ReportMetric(l.p50.Seconds(), "s-p50-localdev")
			b.ReportMetric(l.p95.Seconds(), "s-p95-localdev")
			b.ReportMetric(l.perMinute, "jobs/min-localdev")
			b.ReportMetric(r.perMinute/l.perMinute, "jobs/min-composed/localdev")
			b.Logf("localdev: %d jobs: submit → Succeeded p50 %s, p95 %s; %.0f jobs/min; composed/localdev jobs per minute %.2f",
				n, l.p50.Round(time.Millisecond), l.p95.Round(time.Millisecond), l.perMinute, r.perMinute/l.perMinute)
		})
	}
}

// A benchArm is where runJobs submits: with which armadactl, as whom,
// to which queue.
type benchArm struct {
	a                     *jobflow.Armadactl
	user, password, queue string
}

// jobRun is what one round of jobs measured.
type jobRun struct {
	p50, p95       time.Duration
	perMinute      float64
	firstSucceeded time.Time
}

// runJobs submits n one-second jobs into jobSet in batches and waits
// until every one has succeeded.
func runJobs(b *testing.B, arm benchArm, jobSet string, n int) jobRun {
	b.Helper()
	ctx := b.Context()
	job := jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "1s"})
	var submits []time.Time // when each batch was submitted, in order
	for i := 0; i < n; i += benchBatch {
		jobs := make([]map[string]any, min(benchBatch, n-i))
		for j := range jobs {
			jobs[j] = job
		}
		submits = append(submits, time.Now())
		if out, err := arm.a.Submit(ctx, arm.user, arm.password, arm.queue, jobSet, jobs...); err != nil {
			b.Fatalf("%s: %v\n%s", arm.a.Command("submit", jobSet+".yaml"), err, out)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	evs, out, err := arm.a.Watch(wctx, arm.user, arm.password, arm.queue, jobSet, nil)
	if err != nil {
		b.Fatalf("%s: %v\n%s", arm.a.Command("watch", arm.queue, jobSet, "--raw", "--exit-if-inactive"), err, testutil.Tail(out, 20))
	}
	// A job's batch is the order its Submitted event came in.
	batch := map[string]int{}
	done := map[string]time.Time{}
	for _, e := range evs {
		id := e.JobID()
		switch e.Type {
		case "Submitted":
			if _, ok := batch[id]; !ok {
				batch[id] = len(batch) / benchBatch
			}
		case "Succeeded":
			done[id] = eventTime(e)
		case "Failed", "Cancelled", "Preempted":
			b.Fatalf("job %s of job set %s ended %s: %v", id, jobSet, e.Type, e.Raw)
		}
	}
	if len(done) != n {
		b.Fatalf("job set %s: %d of %d jobs succeeded", jobSet, len(done), n)
	}
	lat := make([]time.Duration, 0, n)
	var first, last time.Time
	for id, t := range done {
		lat = append(lat, t.Sub(submits[min(batch[id], len(submits)-1)]))
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	slices.Sort(lat)
	return jobRun{
		p50: lat[len(lat)/2], p95: lat[len(lat)*95/100],
		perMinute:      float64(n) / last.Sub(submits[0]).Minutes(),
		firstSucceeded: first,
	}
}

// eventTime is an event's own timestamp (its "created").
func eventTime(e jobflow.Event) time.Time {
	raw, _ := e.Raw["created"].(string)
	for _, v := range e.Raw {
		if m, ok := v.(map[string]any); ok && raw == "" {
			raw, _ = m["created"].(string)
		}
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Now()
	}
	return t
}

// memoryTable lists the resident memory of the Armada components the
// runner runs (and extra's processes), the control plane's processes and
// the backends (the processes whose command line names the benchmark's
// temporary directories), each with its children, and returns it with
// each label's KiB.
func memoryTable(b *testing.B, f *flow, extra map[int]string) (string, map[string]int) {
	b.Helper()
	label := maps.Clone(extra)
	if label == nil {
		label = map[int]string{}
	}
	for id, procs := range f.runner.Processes() {
		for _, p := range procs {
			label[p.Pid()] = id
		}
	}
	for name, pids := range f.cp.ProcessGroups() {
		for _, pid := range pids {
			label[pid] = name
		}
	}
	tmp := filepath.Dir(b.TempDir())
	redisAddr := f.be.Redis.Addr()
	pgPort := fmt.Sprintf(" -p %d ", f.be.Postgres.Port)
	children := map[int][]int{}
	entries, _ := filepath.Glob("/proc/[0-9]*")
	for _, e := range entries {
		pid, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		if ppid := procField(pid, "PPid"); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
		if _, ok := label[pid]; ok {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(e, "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		switch {
		// Redis and PostgreSQL rewrite their process titles: known by port.
		case strings.Contains(line, "redis-server ") && strings.Contains(line, redisAddr):
			label[pid] = "redis-server"
		case strings.Contains(line, "/postgres -D ") && strings.Contains(line, pgPort):
			label[pid] = "postgres"
		case strings.Contains(line, "PulsarStandaloneStarter") && strings.Contains(line, tmp):
			label[pid] = "pulsar (java)"
		case strings.Contains(line, tmp):
			label[pid] = filepath.Base(strings.Fields(line)[0])
		}
	}
	total := map[string]int{}
	for pid, l := range label {
		if _, nested := label[procField(pid, "PPid")]; nested {
			continue
		}
		total[l] += treeRSS(pid, children)
	}
	names := make([]string, 0, len(total))
	for l := range total {
		names = append(names, l)
	}
	slices.Sort(names)
	var sb strings.Builder
	sum := 0
	for _, l := range names {
		fmt.Fprintf(&sb, "  %-40s %6d\n", l, total[l]/1024)
		sum += total[l]
	}
	fmt.Fprintf(&sb, "  %-40s %6d\n", "total", sum/1024)
	total["total"] = sum
	return sb.String(), total
}

// reportRSS reports each process's resident memory (MiB) as a metric.
func reportRSS(b *testing.B, arm string, rss map[string]int) {
	b.Helper()
	for l, kib := range rss {
		if kib == 0 {
			continue // a Job's pod, finished
		}
		name := strings.NewReplacer(" (", "-", ")", "", " ", "-", "/", "-").Replace(strings.TrimPrefix(l, arm+" "))
		b.ReportMetric(float64(kib)/1024, "MiB-"+arm+"-"+name)
	}
}

// treeRSS is a process's and its descendants' VmRSS in KiB.
func treeRSS(pid int, children map[int][]int) int {
	rss := procField(pid, "VmRSS")
	for _, c := range children[pid] {
		rss += treeRSS(c, children)
	}
	return rss
}

// procField reads a numeric field of /proc/<pid>/status (kB for sizes).
func procField(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}
