// Package jobflow runs jobs through an Armada this project composed: on a
// local control plane (TLS on, the default) with kube-scheduler and KWOK
// Nodes, the claim composes; package podrun runs every composed pod as
// Armada's own binaries at the composed release, against real PostgreSQL,
// Redis and Pulsar; a worker cluster beside it runs the claim's remote
// executor; a queue comes from provider-armada's Queue; armadactl
// submits jobs; the event stream, Lookout's API and the scheduler's
// database are checked. The harness is internal/harness/jobflow, which `make run`
// shares. What is simulated: KWOK's pods run no containers (a job "runs"
// for the time its annotation asks, then succeeds or fails with its exit
// code), and NetworkPolicies are not enforced (no CNI).
package jobflow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

const (
	ns        = "armada"
	claimName = "armada"
	// queue is the queue provider-armada creates from the claim.
	queue = "jobflow"
	// jobsNamespace holds the jobs' pods: the claim's own queues run their
	// jobs in its default job namespace, <namespace>-jobs, never in the
	// Armada's own (team queues bring their own).
	jobsNamespace = ns + "-jobs"
	// executorCluster is the in-cluster executor's clusterId, as the claim
	// names it.
	executorCluster = "kwok"
	// fieldOwner applies the test's objects.
	fieldOwner = client.FieldOwner("armada-jobflow")
)

// The far ends' names, as a user's claim would name their PostgreSQL,
// Redis and Pulsar; each pod's hosts file resolves them to relays to the
// test's private servers.
const (
	postgresHost = "postgres.data.svc"
	redisHost    = "redis.data.svc"
	pulsarHost   = "pulsar-broker.data.svc"
)

// TestJobFlow composes an Armada and runs jobs through it.
func TestJobFlow(t *testing.T) {
	// Beside TestMakeRun: each starts its own control plane and servers,
	// and both mostly wait (for pods, leases, Pulsar).
	t.Parallel()
	ctx := t.Context()
	// The Armada starts at fromVersion; the Upgrade subtest moves it to the
	// default release.
	f := compose(t, composeOptions{
		nodes: localNodes(), version: fromVersion, upgradeTo: armada.DefaultVersion,
		spec:   map[string]any{"scheduling": poolsSpec(), "executors": executorsSpec(), "retention": pruneRetention()},
		worker: true,
	})
	a, lookout, clusterID, pg, applied := f.a, f.lookout, f.clusterID, f.be.Postgres, f.applied
	adminPassword, submitterPassword, viewerPassword := f.adminPassword, f.claim.Credential("submitter"), f.claim.Credential("viewer")

	t.Run("Succeeded", func(t *testing.T) {
		jobSet := "succeeds"
		submitted := time.Now()
		out, err := a.Submit(ctx, "admin", adminPassword, queue, jobSet, jobflow.JobSpec(jobsNamespace, nil))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.Command("submit", "job.yaml"), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		want := []string{"Submitted", "Queued", "Leased", "Pending", "Running", "Succeeded"}
		if got := jobflow.Types(evs); !jobflow.IsSubsequence(want, got) {
			t.Fatalf("events of job set %s: got %v, want %v in this order; events:\n%s", jobSet, got, want, jobflow.RawEvents(evs))
		}
		t.Logf("submit → Succeeded in %s; apply → first job Succeeded in %s", time.Since(submitted).Round(time.Millisecond), time.Since(applied).Round(time.Second))
		jobs := jobflow.WaitLookout(t, lookout, adminPassword, jobSet, "SUCCEEDED")
		checkRun(t, jobs[0], clusterID)
		checkSchedulerRun(t, pg, jobs[0].JobID, clusterID, "succeeded")
	})

	t.Run("ExecutorAsItsServiceAccount", func(t *testing.T) {
		checkIdentities(ctx, t, "control cluster", f.cp.Client(), f.runner)
		// The remote executor's token, reviewed by the worker's API server.
		checkIdentities(ctx, t, "worker cluster", f.worker.Client(), f.workerRunner)
	})

	t.Run("Failed", func(t *testing.T) {
		jobSet := "fails"
		out, err := a.Submit(ctx, "submitter", submitterPassword, queue, jobSet, jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/exit-code": "3"}))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.Command("submit", "job.yaml"), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Queued", "Leased", "Running", "Failed"}, got) {
			t.Errorf("events of job set %s: got %v, want Running then Failed; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
		}
		jobs := jobflow.WaitLookout(t, lookout, adminPassword, jobSet, "FAILED")
		checkRun(t, jobs[0], clusterID)
		if code := jobs[0].Runs[len(jobs[0].Runs)-1].ExitCode; code == nil || *code != 3 {
			t.Errorf("lookout: job %s's run has exit code %v, want 3 (the job's kwok.armadaproject.io/exit-code)", jobs[0].JobID, deref(code))
		}
	})

	t.Run("AttackJobsFail", func(t *testing.T) { testAttackJobs(t, f, submitterPassword) })

	t.Run("Cancelled", func(t *testing.T) {
		jobSet := "cancelled"
		out, err := a.Submit(ctx, "submitter", submitterPassword, queue, jobSet, jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "10m"}))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.Command("submit", "job.yaml"), err, out)
		}
		jobflow.WaitLookout(t, lookout, adminPassword, jobSet, "RUNNING")
		if out, err := a.Run(ctx, "submitter", submitterPassword, "cancel", "job-set", queue, jobSet); err != nil {
			t.Fatalf("%s: %v\n%s", a.Command("cancel", "job-set", queue, jobSet), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Running", "Cancelled"}, got) {
			t.Errorf("events of job set %s: got %v, want Running then Cancelled; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
		}
		jobflow.WaitLookout(t, lookout, adminPassword, jobSet, "CANCELLED")
	})

	t.Run("RefusedWithoutSubmit", func(t *testing.T) {
		out, err := a.Submit(ctx, "viewer", viewerPassword, queue, "refused", jobflow.JobSpec(jobsNamespace, nil))
		if err == nil || !strings.Contains(out, "PermissionDenied") {
			t.Errorf("viewer, who may only watch queue %s, submitted: err %v, output:\n%s", queue, err, out)
		}
	})

	t.Run("GPUPool", func(t *testing.T) { testGPUPool(t, f) })
	t.Run("RemoteExecutor", func(t *testing.T) { testRemoteExecutor(t, f) })
	t.Run("Upgrade", func(t *testing.T) { testUpgrade(t, f, armada.DefaultVersion) })
	// Last: it prunes the earlier subtests' jobs.
	t.Run("PruneThenSucceeded", func(t *testing.T) { testPruneThenSucceeded(t, f) })
}

// watch follows a job set's events until every job in it has finished,
// within 3 minutes.
func watch(ctx context.Context, t *testing.T, a *jobflow.Armadactl, user, password, jobSet string) []jobflow.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	evs, out, err := a.Watch(ctx, user, password, queue, jobSet, nil)
	if err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("watch", queue, jobSet, "--raw", "--exit-if-inactive"), err, out)
	}
	return evs
}

// checkRun checks a job's last run is on the executor's cluster and a
// KWOK node.
func checkRun(t *testing.T, j jobflow.LookoutJob, clusterID string) {
	t.Helper()
	if len(j.Runs) == 0 {
		t.Fatalf("lookout: job %s has no runs", j.JobID)
	}
	r := j.Runs[len(j.Runs)-1]
	if r.Cluster != clusterID {
		t.Errorf("lookout: job %s ran on cluster %q, want the executor's clusterId %q", j.JobID, r.Cluster, clusterID)
	}
	if r.Node == nil || !strings.HasPrefix(*r.Node, "kwok-node-") {
		t.Errorf("lookout: job %s ran on node %v, want a KWOK node", j.JobID, deref(r.Node))
	}
}

// checkSchedulerRun checks the scheduler's database holds the job's run,
// on the executor, in the given terminal column.
func checkSchedulerRun(t *testing.T, pg *testenv.Postgres, jobID, clusterID, column string) {
	t.Helper()
	out := pg.MustExec(t, "scheduler", fmt.Sprintf("SELECT executor || ' ' || node || ' ' || %s FROM runs WHERE job_id = %s", column, testenv.QuoteLiteral(jobID)))
	got := strings.Fields(strings.TrimSpace(out))
	if len(got) != 3 || got[0] != clusterID || !strings.HasPrefix(got[1], "kwok-node-") || (got[2] != "t" && got[2] != "true") {
		t.Errorf("scheduler database: run of job %s is %q, want executor %s, a KWOK node and %s true", jobID, strings.TrimSpace(out), clusterID, column)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
