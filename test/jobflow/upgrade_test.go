package jobflow

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/node"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// fromVersion is the release the suite's Armada starts at; the upgrade
// subtest moves it to armada.DefaultVersion, and what runs after it runs
// there.
const fromVersion = "0.22.7"

// upgradeJobs is how many jobs are in flight across the upgrade: each
// asks for 10 CPUs, so each of the four 16-CPU Nodes (two CPU, the GPU
// Node, the worker's) runs one and the rest queue.
const upgradeJobs = 6

// schema returns a release's schema version of a database from the
// version table.
func schema(t *testing.T, version, db string) int {
	t.Helper()
	for _, r := range armada.Releases {
		if r.Version == version {
			return r.Schema[db]
		}
	}
	t.Fatalf("Armada %s is not in the version table", version)
	return 0
}

// testUpgrade moves the claim's spec.version to `to` with jobs in flight
// (upgradeLoad), and checks the migrations ran, every component rolled to
// the new release, and every job ended Succeeded with exactly one run and
// one pod; on a real node, that the jobs ran through the upgrade.
func testUpgrade(t *testing.T, f *flow, to string) {
	t.Helper()
	ctx, claim := t.Context(), f.claim.For(t)
	jobSet := "upgrade"
	jobs, inFlight := f.upgradeLoad()
	// Every pod each job gets, in every cluster: Armada's runs do not show
	// a pod created again under the same run.
	tracker := trackJobPods(ctx, jobSet, f.clients()...)
	out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, jobSet, jobs...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	jobflow.WaitFor(t, 2*time.Minute, "jobs of job set "+jobSet+" "+inFlight.what, func() (bool, string) {
		js, err := jobflow.LookoutJobs(ctx, f.lookout, "admin", f.adminPassword, jobSet)
		if err != nil {
			return false, err.Error()
		}
		n := states(js)
		return len(js) == len(jobs) && inFlight.ok(n), fmt.Sprint(n)
	}, nil)
	from := claim.Version("running")
	patched := time.Now()
	f.manifest.Object["spec"].(map[string]any)["version"] = to
	apply(t, f.cp.Client(), f.manifest)
	jobflow.WaitFor(t, 6*time.Minute, "the claim running "+to+" and Ready", func() (bool, string) {
		running := claim.Version("running")
		s, r, m := claim.Condition("Ready")
		return running == to && s == "True", fmt.Sprintf("running %s; Ready=%s %s: %s", running, s, r, m)
	}, nil)
	t.Logf("spec.version %s → %s: running and Ready in %s", from, to, time.Since(patched).Round(time.Second))
	if f.node != nil {
		// The jobs' containers outlived the old executor: each is still
		// running under the new one.
		js, err := jobflow.LookoutJobs(ctx, f.lookout, "admin", f.adminPassword, jobSet)
		if n := states(js); err != nil || n["RUNNING"] != len(jobs) {
			t.Errorf("once the upgrade was done, the jobs were %v (%v), want all %d still running: they must run through it (nodeUpgradeSleep)", n, err, len(jobs))
		}
	}
	for _, db := range []string{"scheduler", "lookout"} {
		want := schema(t, to, db)
		if got := strings.TrimSpace(f.be.Postgres.MustExec(t, db, "SELECT last_value FROM database_version")); got != strconv.Itoa(want) {
			t.Errorf("database %s is at schema version %s after the upgrade, want %d (Armada %s's migrations)", db, got, want, to)
		}
	}

	var done []jobflow.LookoutJob
	jobflow.WaitFor(t, 4*time.Minute, "every job of job set "+jobSet+" finished", func() (bool, string) {
		var err error
		done, err = jobflow.LookoutJobs(ctx, f.lookout, "admin", f.adminPassword, jobSet)
		if err != nil {
			return false, err.Error()
		}
		n := states(done)
		return n["QUEUED"]+n["LEASED"]+n["PENDING"]+n["RUNNING"] == 0, fmt.Sprint(n)
	}, nil)
	if len(done) != len(jobs) {
		t.Errorf("lookout shows %d jobs of job set %s, want the %d submitted", len(done), jobSet, len(jobs))
	}
	for _, j := range done {
		if j.State != "SUCCEEDED" || len(j.Runs) != 1 {
			t.Errorf("lookout: job %s is %s with %d runs, want SUCCEEDED with one run", j.JobID, j.State, len(j.Runs))
		}
	}
	checkOneRunEach(t, f.be.Postgres, jobSet, len(jobs))
	pods := tracker.Stop()
	for _, j := range done {
		if pods[j.JobID] != 1 {
			t.Errorf("job %s had %d pods, want one (run once)", j.JobID, pods[j.JobID])
		}
	}
	for _, c := range f.clients() {
		checkImages(t, c, to)
	}

	// The upgraded Armada takes new work, from the new release's armadactl.
	f.a.Bin = f.armadactl[to]
	after := "after-upgrade"
	if out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, after, f.job()); err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	jobflow.WaitLookout(t, f.lookout, f.adminPassword, after, "SUCCEEDED")
}

// states counts jobs by state.
func states(jobs []jobflow.LookoutJob) map[string]int {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.State]++
	}
	return n
}

// inFlight says when the jobs of an upgrade are in flight.
type inFlight struct {
	what string
	ok   func(byState map[string]int) bool
}

// upgradeLoad is the jobs in flight across an upgrade, and when they are.
// On KWOK, upgradeJobs jobs of 10 CPUs each, running for 40 s: some run,
// the rest queue behind them. On a real node, nodeUpgradeJobs containers
// sleeping for nodeUpgradeSleep, all running.
func (f *flow) upgradeLoad() ([]map[string]any, inFlight) {
	if f.node != nil {
		jobs := make([]map[string]any, nodeUpgradeJobs)
		for i := range jobs {
			jobs[i] = jobflow.NodeJobSpec(node.JobImage, jobsNamespace, "-sleep="+nodeUpgradeSleep.String())
		}
		return jobs, inFlight{what: "running", ok: func(n map[string]int) bool { return n["RUNNING"] == len(jobs) }}
	}
	res := map[string]any{"cpu": "10", "memory": "1Gi"}
	jobs := make([]map[string]any, upgradeJobs)
	for i := range jobs {
		j := jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "40s"})
		c := j["podSpec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{"requests": res, "limits": res}
		jobs[i] = j
	}
	return jobs, inFlight{what: "running and queued", ok: func(n map[string]int) bool { return n["RUNNING"] > 0 && n["QUEUED"] > 0 }}
}

// job is a short job: a KWOK pod, or a container on the node.
func (f *flow) job() map[string]any {
	if f.node != nil {
		return jobflow.NodeJobSpec(node.JobImage, jobsNamespace, "-sleep=1s")
	}
	return jobflow.JobSpec(jobsNamespace, nil)
}

// clients reach the clusters the flow's pods run in: the control cluster
// and, if any, the worker.
func (f *flow) clients() []client.Client {
	if f.worker == nil {
		return []client.Client{f.cp.Client()}
	}
	return []client.Client{f.cp.Client(), f.worker.Client()}
}

// checkOneRunEach checks the scheduler's database holds exactly one run,
// succeeded, for each of the jobs of a job set.
func checkOneRunEach(t *testing.T, pg *testenv.Postgres, jobSet string, jobs int) {
	t.Helper()
	out := pg.MustExec(t, "scheduler", fmt.Sprintf(
		"SELECT j.job_id || ' ' || count(r.run_id) || ' ' || count(r.run_id) FILTER (WHERE r.succeeded) "+
			"FROM jobs j LEFT JOIN runs r ON r.job_id = j.job_id WHERE j.job_set = %s GROUP BY j.job_id ORDER BY j.job_id",
		testenv.QuoteLiteral(jobSet)))
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != jobs {
		t.Errorf("scheduler database: %d jobs in job set %s, want %d:\n%s", len(rows), jobSet, jobs, out)
	}
	for _, row := range rows {
		if f := strings.Fields(row); len(f) != 3 || f[1] != "1" || f[2] != "1" {
			t.Errorf("scheduler database: job, runs, succeeded runs = %q, want one run, succeeded", row)
		}
	}
}

// checkImages checks every composed Armada workload in the claim's
// namespace of cluster c runs the release's images (and its sidecars a
// pinned tool's).
func checkImages(t *testing.T, c client.Client, version string) {
	t.Helper()
	for _, kind := range []string{"DeploymentList", "StatefulSetList"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("apps/v1")
		l.SetKind(kind)
		if err := c.List(t.Context(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, w := range l.Items {
			cs, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
			for _, ctr := range cs {
				img := fmt.Sprint(ctr.(map[string]any)["image"])
				switch podrun.KindOfImage(img) {
				case podrun.ArmadaImage:
					if !strings.HasSuffix(img, ":"+version) {
						t.Errorf("%s %s runs %s after the upgrade, want Armada %s", w.GetKind(), w.GetName(), img, version)
					}
				case podrun.ToolImage:
					// A sidecar (binoculars' TLS proxies) runs its pinned tool.
				case podrun.PulsarImage, podrun.OtherImage:
					t.Errorf("%s %s runs %s, neither an Armada image nor a pinned tool's", w.GetKind(), w.GetName(), img)
				}
			}
		}
	}
}
