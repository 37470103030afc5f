package jobflow

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// pruneRetention is the claim's spec.retention in TestJobFlow: jobs
// finished a second ago are pruned, so one run of each pruner deletes the
// jobs of the subtests before it. Nothing runs the CronJobs on their own
// (the control plane runs no CronJob controller): only
// testPruneThenSucceeded does.
func pruneRetention() map[string]any {
	return map[string]any{
		"scheduler": map[string]any{"expireAfter": "1s"},
		"lookout":   map[string]any{"expireAfter": "1s"},
	}
}

// testPruneThenSucceeded runs each composed database pruner once, as a
// Job made from its CronJob's jobTemplate as `kubectl create job
// --from=cronjob/...` makes it, which the runner runs as Armada's own
// binaries with the composed args and config (the scheduler's
// pruneDatabase, Lookout's --pruneDatabase). It checks the jobs of the
// earlier job set "succeeds" are gone from both databases, then that a
// job submitted after the prune runs to Succeeded, in the event stream,
// in Lookout and in the scheduler's database.
func testPruneThenSucceeded(t *testing.T, f *flow) {
	t.Helper()
	ctx := t.Context()
	pg := f.be.Postgres
	count := func(db, query string) int {
		t.Helper()
		n, err := strconv.Atoi(strings.TrimSpace(pg.MustExec(t, db, query)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	pruned := func() (int, int) {
		return count("scheduler", "SELECT count(*) FROM jobs WHERE job_set = 'succeeds'"),
			count("lookout", "SELECT count(*) FROM job WHERE jobset = 'succeeds'")
	}
	if s, l := pruned(); s == 0 || l == 0 {
		t.Fatalf("before the prune, job set succeeds has %d jobs in the scheduler database and %d in Lookout's: the prune would prove nothing", s, l)
	}

	c := f.cp.Client()
	var cronJobs batchv1.CronJobList
	if err := c.List(ctx, &cronJobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for i := range cronJobs.Items {
		cj := &cronJobs.Items[i]
		if !strings.HasSuffix(cj.Name, "-prune-scheduler") && !strings.HasSuffix(cj.Name, "-prune-lookout") {
			continue
		}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{
				Name: cj.Name + "-now", Namespace: ns, Labels: cj.Spec.JobTemplate.Labels,
				Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true),
				}},
			},
			Spec: cj.Spec.JobTemplate.Spec,
		}
		if err := c.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job.Name)
	}
	if len(jobs) != 2 {
		t.Fatalf("the claim composes pruner CronJobs %v, want the scheduler's and Lookout's", jobs)
	}
	start := time.Now()
	jobflow.WaitFor(t, 3*time.Minute, "the pruner Jobs to complete", func() (bool, string) {
		for _, name := range jobs {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("batch/v1")
			u.SetKind("Job")
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			done := false
			for _, cd := range conds {
				if m, ok := cd.(map[string]any); ok && m["type"] == "Complete" && m["status"] == "True" {
					done = true
				}
			}
			if !done {
				return false, fmt.Sprintf("Job %s is not complete: %s\n%s", name, jobflow.RunnerState(f.runner), jobflow.PodLogs(f.runner))
			}
		}
		return true, ""
	}, nil)
	if s, l := pruned(); s != 0 || l != 0 {
		t.Fatalf("after the prune, job set succeeds still has %d jobs in the scheduler database and %d in Lookout's, want none", s, l)
	}
	t.Logf("both pruners ran in %s and pruned job set succeeds", time.Since(start).Round(time.Millisecond))

	jobSet := "after-prune"
	out, err := f.a.Submit(ctx, "admin", f.adminPassword, queue, jobSet, jobflow.JobSpec(jobsNamespace, nil))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, out)
	}
	evs := watch(ctx, t, f.a, "admin", f.adminPassword, jobSet)
	if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Queued", "Leased", "Running", "Succeeded"}, got) {
		t.Fatalf("events of job set %s after the prune: got %v, want it to run to Succeeded; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
	}
	done := jobflow.WaitLookout(t, f.lookout, f.adminPassword, jobSet, "SUCCEEDED")
	if n := count("scheduler", "SELECT count(*) FROM runs WHERE succeeded AND job_id = "+testenv.QuoteLiteral(done[0].JobID)); n != 1 {
		t.Errorf("scheduler database: job %s has %d succeeded runs, want 1", done[0].JobID, n)
	}
}
