package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// rendersEnv, if set, is a glob of render outputs to check instead of the
// render golden files.
const rendersEnv = "ARMADA_CONFORMANCE_RENDERS"

// TestArmadaConformance runs every render golden file with the binaries of
// the Armada release it renders (the XR's status.version.desired): the
// default release on every example, and each other supported release on
// the examples rendered at it (test/render/testdata/versions). Every
// supported release must be covered.
func TestArmadaConformance(t *testing.T) {
	pattern := os.Getenv(rendersEnv)
	var files []string
	if pattern == "" {
		for _, p := range []string{"*.yaml", filepath.Join("versions", "*.yaml")} {
			m, _ := filepath.Glob(filepath.Join("..", "render", "testdata", p))
			files = append(files, m...)
		}
		pattern = "the render golden files (test/render/testdata and its versions directory)"
	} else {
		files, _ = filepath.Glob(pattern)
	}
	if len(files) == 0 {
		t.Fatalf("no render outputs in %s; generate the render golden files first", pattern)
	}
	// Every render's release first, so a release no render covers fails
	// before anything runs.
	versions := map[string]string{}
	examples := map[string][]string{}
	token := false
	for _, f := range files {
		r, err := conformance.LoadRender(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.XRSecretRef("pulsar", "tokenSecretRef"); ok {
			token = true
		}
		v := r.XRString("", "status", "version", "desired")
		if _, ok := armada.ReleaseOf(v); !ok {
			t.Fatalf("%s renders Armada %q, which is not in the version table %v", f, v, armada.SupportedVersions)
		}
		versions[f] = v
		examples[v] = append(examples[v], strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)))
	}
	for _, v := range armada.SupportedVersions {
		t.Logf("Armada %s: %d renders to check: %s", v, len(examples[v]), strings.Join(examples[v], ", "))
		if len(examples[v]) == 0 && os.Getenv(rendersEnv) == "" {
			t.Errorf("no render golden file runs Armada %s: render at least examples/minimal.yaml at it (test/render writes testdata/versions)", v)
		}
	}
	home := controlplane.StartWorkerClusters(t, []string{conformance.ThisCluster})
	pulsars := conformance.StartBrokers(t, token)
	envs := map[string]*conformance.Env{}
	for _, f := range files {
		v := versions[f]
		if envs[v] == nil {
			envs[v] = conformance.NewEnv(t, v)
			envs[v].Home = home
			envs[v].Brokers = pulsars
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			// Examples run side by side (go test -parallel): each has its
			// own PostgreSQL, Redis, ports, directories and worker
			// clusters, holds a Pulsar broker of its own while it runs
			// (StartBrokers) and the shared API server while its
			// in-cluster executors run (homeMu).
			t.Parallel()
			runExample(t, envs[v], f)
		})
	}
}

func runExample(t *testing.T, e *conformance.Env, file string) {
	t.Helper()
	start := time.Now()
	r, err := conformance.LoadRender(file)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := r.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	svc, supplied := conformance.StartServices(t, r, workloads, e.Brokers)
	runs, workloadOf, topics, skipped := conformance.NewRuns(t, e, r, workloads, supplied)
	conformance.CheckAccounting(t, r, runs, e.Version)
	conformance.StartStandIns(t, svc, r, runs, workloadOf)
	// Worker clusters start in the background while migrations run.
	remote := conformance.StartRemote(t, runs, svc.ExecutorAPICA)
	conformance.PrepareDatabases(t, r, svc, runs)
	free := conformance.NewPorts(t).Free
	migrations := runMigrations(t, e, svc, free, runs)
	runTopicJobs(t, e, svc, topics, runs)
	conformance.CheckTables(t, svc, runs)
	conformance.CheckWiring(t, runs)
	started := runComponents(t, e, svc, free, runs)
	checkTLS(t, e, svc, free, runs)
	checkLookoutTLS(t, e, svc, free, runs, r.XRString("", "status", "endpoints", "lookout"))
	checkBinocularsTLS(t, e, svc, free, runs)
	locals := checkLocalExecutors(t, e, svc, free, r, runs, workloadOf)
	// Remote executors run one after the other against their worker
	// clusters and the executor API; the first also shows what each part
	// of the wiring is needed for.
	remotes := 0
	for _, rn := range runs {
		if rn.Cluster == "" || rn.Job {
			continue
		}
		t.Run(rn.ID(), func(t *testing.T) {
			kubeconfig := conformance.PrepareWorker(t, r, remote, workloadOf[rn], rn.Root)
			checkRemoteExecutor(t, e, svc, free, remote, rn, kubeconfig, remotes == 0)
		})
		remotes++
	}
	t.Logf("%s (Armada %s): %d migration containers run twice; %d Pulsar topic Jobs run against the real broker; %d components started and checked; %d in-cluster executors run against this cluster's API server and the scheduler; %d remote executors run against worker clusters and the executor API; %d non-Armada containers not run; in %s",
		filepath.Base(file), e.Version, migrations, len(topics), started, locals, remotes, skipped, time.Since(start).Round(time.Second))
}

// runMigrations runs every Job container, each in a subtest, and returns
// how many it ran.
func runMigrations(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, runs []*conformance.Run) int {
	t.Helper()
	n := 0
	for _, rn := range runs {
		if rn.Job {
			t.Run(rn.ID(), func(t *testing.T) { conformance.RunMigration(t, e, svc, free, rn) })
			n++
		}
	}
	return n
}

// runComponents starts every long-running container together, checks
// them one by one and checks the metric names they served. It returns how
// many it started.
func runComponents(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, runs []*conformance.Run) int {
	t.Helper()
	started := map[*conformance.Run]*conformance.Component{}
	for _, rn := range runs {
		if !rn.Job && rn.Cluster == "" {
			started[rn] = conformance.StartComponent(t, e, svc, free, rn)
		}
	}
	for _, rn := range runs {
		if c, ok := started[rn]; ok {
			t.Run(rn.ID(), func(t *testing.T) { conformance.CheckComponent(t, svc, rn, c) })
		}
	}
	conformance.CheckScrapedNames(t, e, started)
	return len(started)
}
