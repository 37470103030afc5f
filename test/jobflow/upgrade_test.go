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

// testUpgrade moves the claim's spec.version to `to` with jobs queued and
// running, and checks the migrations ran, every component rolled to the
// new release, and every job ended Succeeded with exactly one run.
func testUpgrade(t *testing.T, f *flow, to string) {
	t.Helper()
	ctx, claim := t.Context(), f.claim.For(t)
	jobSet := "upgrade"
	res := map[string]any{"cpu": "10", "memory": "1Gi"}
	jobs := make([]map[string]any, upgradeJobs)
	for i := range jobs {
		j := jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "40s"})
		c := j["podSpec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{"requests": res, "limits": res}
		jobs[i] = j
	}
	// Every pod each job gets, in both clusters: Armada's runs do not show
	// a pod created again under the same run.
	tracker := trackJobPods(ctx, jobSet, f.cp.Client(), f.worker.Client())
	out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, jobSet, jobs...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	// In flight: some running, the rest queued behind them.
	jobflow.WaitFor(t, 2*time.Minute, "jobs of job set "+jobSet+" running and queued", func() (bool, string) {
		js, err := jobflow.LookoutJobs(ctx, f.lookout, "admin", f.adminPassword, jobSet)
		if err != nil {
			return false, err.Error()
		}
		n := states(js)
		return len(js) == upgradeJobs && n["RUNNING"] > 0 && n["QUEUED"] > 0, fmt.Sprint(n)
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
	if len(done) != upgradeJobs {
		t.Errorf("lookout shows %d jobs of job set %s, want the %d submitted", len(done), jobSet, upgradeJobs)
	}
	for _, j := range done {
		if j.State != "SUCCEEDED" || len(j.Runs) != 1 {
			t.Errorf("lookout: job %s is %s with %d runs, want SUCCEEDED with one run", j.JobID, j.State, len(j.Runs))
		}
	}
	checkOneRunEach(t, f.be.Postgres, jobSet)
	pods := tracker.Stop()
	for _, j := range done {
		if pods[j.JobID] != 1 {
			t.Errorf("job %s had %d pods, want one (run once)", j.JobID, pods[j.JobID])
		}
	}
	checkImages(t, f.cp.Client(), to)
	checkImages(t, f.worker.Client(), to)

	// The upgraded Armada takes new work, from the new release's armadactl.
	f.a.Bin = f.armadactl[to]
	after := "after-upgrade"
	if out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, after, jobflow.JobSpec(jobsNamespace, nil)); err != nil {
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

// checkOneRunEach checks the scheduler's database holds exactly one run,
// succeeded, for each job of a job set.
func checkOneRunEach(t *testing.T, pg *testenv.Postgres, jobSet string) {
	t.Helper()
	out := pg.MustExec(t, "scheduler", fmt.Sprintf(
		"SELECT j.job_id || ' ' || count(r.run_id) || ' ' || count(r.run_id) FILTER (WHERE r.succeeded) "+
			"FROM jobs j LEFT JOIN runs r ON r.job_id = j.job_id WHERE j.job_set = %s GROUP BY j.job_id ORDER BY j.job_id",
		testenv.QuoteLiteral(jobSet)))
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != upgradeJobs {
		t.Errorf("scheduler database: %d jobs in job set %s, want %d:\n%s", len(rows), jobSet, upgradeJobs, out)
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
