package jobflow

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// localDevQueue is the queue the localdev arm creates, as a localdev user
// would (anonymous, `armadactl create queue`).
const localDevQueue = "localdev"

// runLocalDev stops f's composed Armada, runs the same release's binaries
// in Armada's own local-development configuration (jobflow.StartLocalDev)
// on f's backends with f's control plane as its cluster, and runs n
// one-second jobs through it as runJobs does. It reports each process's
// resident memory at the end.
func runLocalDev(b *testing.B, f *flow, n int) jobRun {
	b.Helper()
	ctx := b.Context()
	f.stopRunner()
	rel, _, err := jobflow.FindRelease(ctx, armada.DefaultVersion)
	if err != nil {
		b.Fatal(err)
	}
	// _local/scripts/init.sh applies these PriorityClasses (a class that
	// exists already is kept, as there).
	pcs, err := manifest.ReadFile(filepath.Join(rel.SourceDir, "_local", "kind", "priorityclasses.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, pc := range pcs {
		if err := f.cp.Client().Create(ctx, pc); err != nil && !kerrors.IsAlreadyExists(err) {
			b.Fatalf("cannot create PriorityClass %s: %v", pc.GetName(), err)
		}
	}
	started := time.Now()
	ld := jobflow.StartLocalDev(b, jobflow.LocalDevOptions{
		Release: rel, Backends: f.be, Kubeconfig: f.cp.Kubeconfig(), RedisPassword: f.redisPassword,
	})
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("localdev logs:\n%s", ld.Logs())
		}
	})
	seen := jobflow.WaitExecutorIn(b, f.be.Postgres, ld.SchedulerDB, ld.ClusterID, nil)
	b.Logf("localdev: started → executor %s in the scheduler's database in %s", ld.ClusterID, time.Since(started).Round(time.Second))
	a := &jobflow.Armadactl{Bin: f.armadactl[armada.DefaultVersion], Dir: b.TempDir(), Hosts: f.a.Hosts, Server: ld.Server}
	jobflow.WaitFor(b, time.Minute, "localdev queue "+localDevQueue, func() (bool, string) {
		out, err := a.Run(ctx, "", "", "create", "queue", localDevQueue)
		if err != nil && !strings.Contains(out, "already exists") {
			return false, fmt.Sprintf("%v: %s", err, testutil.Tail(out, 3))
		}
		return true, ""
	}, nil)
	jobflow.WaitSubmitCheck(b, seen, nil)
	r := runJobs(b, benchArm{a: a, queue: localDevQueue}, fmt.Sprintf("localdev-%d", n), n)
	extra := map[int]string{}
	for name, p := range ld.Processes {
		extra[p.Pid()] = "localdev " + name
	}
	table, rss := memoryTable(b, f, extra)
	reportRSS(b, "localdev", rss)
	b.Logf("localdev: resident memory at the end (MiB, the composed Armada stopped):\n%s", table)
	return r
}
