package conformance

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// expiredJobs is how many finished jobs older than the retention each
// database holds before the prune: the size the issue asks to measure.
const expiredJobs = 10000

// pruneTimeout bounds one pruner run.
const pruneTimeout = 5 * time.Minute

// TestArmadaPruning runs the composed database pruners (the CronJobs of
// examples/minimal.yaml's render golden file, with Armada's default
// retention: 2h for the scheduler database, 1008h for Lookout's) with
// Armada's own binaries against a private PostgreSQL, migrated by the
// composed migration Jobs and seeded in each database with
//
//   - expiredJobs jobs that finished (succeeded, failed or cancelled) 2000h
//     ago, each with a run, its spec or metadata;
//   - 100 jobs that finished an hour ago;
//   - 100 queued and 100 running jobs last changed 2000h ago;
//   - in Lookout, 100 deduplication entries 200h old and 10 an hour old.
//
// After one run of each pruner (each must exit 0 and use every key of its
// rendered config) the expired jobs, their runs, specs and the old
// deduplication entries are gone, and every other row is still there. It
// logs each database's size: migrated and empty, seeded, after the prune,
// and after VACUUM FULL (PostgreSQL keeps a table's files after DELETE;
// autovacuum makes the space reusable, VACUUM FULL returns it).
func TestArmadaPruning(t *testing.T) {
	r, err := conformance.LoadRender(filepath.Join("..", "render", "testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v := r.XRString("", "status", "version", "desired")
	if v != armada.DefaultVersion {
		t.Fatalf("minimal.yaml renders Armada %s, want the default %s", v, armada.DefaultVersion)
	}
	all, err := r.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	var workloads []podrun.Workload
	for _, w := range all {
		if w.Kind == "Job" && strings.Contains(w.Name, "-migrate-") {
			workloads = append(workloads, w)
		}
	}
	prune := pruners(t, r)
	if len(prune) != 2 {
		t.Fatalf("the render composes %d CronJobs, want a pruner per database", len(prune))
	}
	workloads = append(workloads, prune...)
	e := conformance.NewEnv(t, v)
	svc, supplied := conformance.StartDatabase(t, r, workloads)
	runs, _, topics, _ := conformance.NewRuns(t, e, r, workloads, supplied)
	if len(topics) != 0 {
		t.Fatalf("%d Pulsar topic Jobs among the migrations and pruners", len(topics))
	}
	conformance.PrepareDatabases(t, r, svc, runs)
	free := conformance.NewPorts(t).Free

	pruners := map[string]*conformance.Run{}
	for _, rn := range runs {
		if strings.Contains(rn.Inv.Workload, "-prune-") {
			pruners[rn.Inv.Component] = rn
			continue
		}
		t.Run(rn.ID(), func(t *testing.T) { conformance.RunMigration(t, e, svc, free, rn) })
	}
	if t.Failed() {
		t.FailNow()
	}
	dbs := map[string]string{}
	for component, rn := range pruners {
		dbs[component], _ = rn.Effective("postgres.connection.dbname")
	}
	if dbs["scheduler"] == "" || dbs["lookout"] == "" {
		t.Fatalf("pruners by binary: %v, want the scheduler's and Lookout's, each with its database", dbs)
	}

	pg := svc.PG
	sizes := map[string][]int64{}
	measure := func() {
		for _, c := range []string{"scheduler", "lookout"} {
			sizes[c] = append(sizes[c], conformance.DatabaseSize(t, pg, dbs[c]))
		}
	}
	measure()
	seedScheduler(t, pg, dbs["scheduler"])
	seedLookout(t, pg, dbs["lookout"])
	pg.MustExec(t, dbs["scheduler"], "ANALYZE")
	pg.MustExec(t, dbs["lookout"], "ANALYZE")
	measure()
	before := map[string]map[string]int{"scheduler": schedulerRows(t, pg, dbs["scheduler"]), "lookout": lookoutRows(t, pg, dbs["lookout"])}

	took := map[string]time.Duration{}
	for _, c := range []string{"scheduler", "lookout"} {
		took[c] = conformance.RunOnce(t, e, svc, free, pruners[c], pruneTimeout)
	}
	measure()
	after := map[string]map[string]int{"scheduler": schedulerRows(t, pg, dbs["scheduler"]), "lookout": lookoutRows(t, pg, dbs["lookout"])}

	// Expired rows are gone; every other row is kept.
	want := map[string]map[string]int{}
	for db, rows := range before {
		want[db] = map[string]int{}
		for k, n := range rows {
			want[db][k] = n
			if strings.HasPrefix(k, "expired ") {
				want[db][k] = 0
			}
		}
	}
	for db, rows := range before {
		for k, n := range rows {
			if strings.HasPrefix(k, "expired ") && n == 0 {
				t.Errorf("%s: the seed wrote no %s; the test would prove nothing", db, k)
			}
		}
	}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("rows by database after one prune (-want +got):\n%s", diff)
	}

	for _, c := range []string{"scheduler", "lookout"} {
		pg.MustExec(t, dbs[c], "VACUUM FULL")
	}
	measure()
	for _, c := range []string{"scheduler", "lookout"} {
		s := sizes[c]
		t.Logf("%s database: migrated %s; with %d expired jobs %s; after the prune (%s) %s; after VACUUM FULL %s",
			c, mib(s[0]), expiredJobs, mib(s[1]), took[c].Round(10*time.Millisecond), mib(s[2]), mib(s[3]))
	}
}

// pruners are the render's pruner CronJobs. The restore drill's CronJob
// runs barman-cloud-restore, not Armada: test/backups' TestRestoreDrill
// runs it.
func pruners(t *testing.T, r *conformance.Render) []podrun.Workload {
	t.Helper()
	cronJobs, err := r.CronJobs()
	if err != nil {
		t.Fatal(err)
	}
	var out []podrun.Workload
	for _, w := range cronJobs {
		if strings.Contains(w.Name, "-prune-") {
			out = append(out, w)
		}
	}
	return out
}

// TestArmadaPrunersOnEveryRender runs, for every render golden file that
// composes pruners (test/render/testdata and its versions directory), its
// migration Jobs and then each pruner CronJob's container once with the
// binaries of the Armada release it renders, on a private PostgreSQL:
// each must exit 0 and use every key of its rendered config, whatever the
// example's database (External or in-cluster), settings and release.
func TestArmadaPrunersOnEveryRender(t *testing.T) {
	var files []string
	for _, p := range []string{"*.yaml", filepath.Join("versions", "*.yaml")} {
		m, _ := filepath.Glob(filepath.Join("..", "render", "testdata", p))
		files = append(files, m...)
	}
	envs := map[string]*conformance.Env{}
	ran := 0
	for _, f := range files {
		r, err := conformance.LoadRender(f)
		if err != nil {
			t.Fatal(err)
		}
		prune := pruners(t, r)
		if len(prune) == 0 {
			continue
		}
		v := r.XRString("", "status", "version", "desired")
		if envs[v] == nil {
			envs[v] = conformance.NewEnv(t, v)
		}
		e := envs[v]
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			t.Parallel()
			all, err := r.Workloads()
			if err != nil {
				t.Fatal(err)
			}
			var workloads []podrun.Workload
			for _, w := range all {
				if w.Kind == "Job" && strings.Contains(w.Name, "-migrate-") && w.Cluster == "" {
					workloads = append(workloads, w)
				}
			}
			workloads = append(workloads, prune...)
			svc, supplied := conformance.StartDatabase(t, r, workloads)
			runs, _, topics, _ := conformance.NewRuns(t, e, r, workloads, supplied)
			if len(topics) != 0 {
				t.Fatalf("%d Pulsar topic Jobs among the migrations and pruners", len(topics))
			}
			conformance.PrepareDatabases(t, r, svc, runs)
			free := conformance.NewPorts(t).Free
			pruned := 0
			for _, rn := range runs {
				if rn.Inv.Tag != v {
					t.Errorf("%s runs image tag %s, want the render's release %s", rn.ID(), rn.Inv.Tag, v)
				}
				conformance.RunOnce(t, e, svc, free, rn, pruneTimeout)
				if strings.Contains(rn.Inv.Workload, "-prune-") {
					pruned++
				}
			}
			if pruned != len(prune) {
				t.Errorf("ran %d pruner containers, want one per CronJob (%d)", pruned, len(prune))
			}
		})
	}
	if ran == 0 {
		t.Fatal("no render golden file composes pruners")
	}
	t.Logf("%d renders' pruners run, at releases %v", ran, slices.Sorted(maps.Keys(envs)))
}

// mib is a size in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Times the seeds are stamped with.
const (
	expired     = "now() - interval '2000 hours'"
	recent      = "now() - interval '1 hour'"
	expiredUTC  = "(now() at time zone 'utc') - interval '2000 hours'"
	recentUTC   = "(now() at time zone 'utc') - interval '1 hour'"
	olderDedup  = "(now() at time zone 'utc') - interval '200 hours'"
	seedRunning = 100
)

// seedScheduler writes the scheduler database's jobs (jobs, job_metadata,
// runs) as the scheduler ingester would.
func seedScheduler(t *testing.T, pg *testenv.Postgres, db string) {
	t.Helper()
	job := func(prefix string, n int, set map[string]string) {
		set["job_id"] = "'" + prefix + "-' || i"
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "jobs", From: 1, To: n, Set: set})
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job_metadata", From: 1, To: n, Set: map[string]string{"job_id": set["job_id"]}})
	}
	run := func(prefix string, n int, set map[string]string) {
		set["job_id"] = "'" + prefix + "-' || i"
		set["run_id"] = "'run-" + prefix + "-' || i"
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "runs", From: 1, To: n, Set: set})
	}
	finished := func(ts string) map[string]string {
		return map[string]string{"succeeded": "i % 3 = 0", "failed": "i % 3 = 1", "cancelled": "i % 3 = 2", "queued": "false", "last_modified": ts}
	}
	job("expired", expiredJobs, finished(expired))
	run("expired", expiredJobs, map[string]string{"succeeded": "i % 3 = 0", "failed": "i % 3 = 1", "running": "true", "last_modified": expired})
	job("recent", 100, finished(recent))
	run("recent", 100, map[string]string{"succeeded": "true", "running": "true", "last_modified": recent})
	job("queued", 100, map[string]string{"queued": "true", "last_modified": expired})
	job("running", seedRunning, map[string]string{"queued": "false", "last_modified": expired})
	run("running", seedRunning, map[string]string{"running": "true", "last_modified": expired})
}

// schedulerRows counts the scheduler database's rows by kind of job.
func schedulerRows(t *testing.T, pg *testenv.Postgres, db string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, kind := range []string{"expired", "recent", "queued", "running"} {
		for _, table := range []string{"jobs", "job_metadata", "runs"} {
			out[kind+" "+table] = conformance.Count(t, pg, db, "SELECT count(*) FROM "+table+" WHERE job_id LIKE '"+kind+"-%'")
		}
	}
	return out
}

// seedLookout writes the lookout database's jobs (job, job_spec,
// job_run) and deduplication entries as the lookout ingester would.
func seedLookout(t *testing.T, pg *testenv.Postgres, db string) {
	t.Helper()
	job := func(prefix string, n int, state, ts string) {
		id := "'" + prefix + "-' || i"
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job", From: 1, To: n, Set: map[string]string{
			"job_id": id, "state": state, "last_transition_time": ts, "annotations": "'{}'::jsonb", "last_transition_time_seconds": "extract(epoch from " + ts + ")::bigint",
		}})
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job_spec", From: 1, To: n, Set: map[string]string{"job_id": id}})
		conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job_run", From: 1, To: n, Set: map[string]string{
			"job_id": id, "run_id": "'run-" + prefix + "-' || i", "pending": ts,
		}})
	}
	// Lookout's states: 1 queued, 3 running, 4 succeeded, 5 failed, 6
	// cancelled (internal/lookout/model).
	job("expired", expiredJobs, "(4 + i % 3)::smallint", expiredUTC)
	job("recent", 100, "4::smallint", recentUTC)
	job("queued", 100, "1::smallint", expiredUTC)
	job("running", seedRunning, "3::smallint", expiredUTC)
	conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job_deduplication", From: 1, To: 100, Set: map[string]string{
		"deduplication_id": "'expired-dedup-' || i", "job_id": "'expired-' || i", "inserted": olderDedup,
	}})
	conformance.SeedRows(t, pg, db, conformance.Seed{Table: "job_deduplication", From: 1, To: 10, Set: map[string]string{
		"deduplication_id": "'recent-dedup-' || i", "job_id": "'recent-' || i", "inserted": recentUTC,
	}})
}

// lookoutRows counts the lookout database's rows by kind of job.
func lookoutRows(t *testing.T, pg *testenv.Postgres, db string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, kind := range []string{"expired", "recent", "queued", "running"} {
		for _, table := range []string{"job", "job_spec", "job_run"} {
			out[kind+" "+table] = conformance.Count(t, pg, db, "SELECT count(*) FROM "+table+" WHERE job_id LIKE '"+kind+"-%'")
		}
	}
	for _, kind := range []string{"expired", "recent"} {
		out[kind+" job_deduplication"] = conformance.Count(t, pg, db, "SELECT count(*) FROM job_deduplication WHERE deduplication_id LIKE '"+kind+"-dedup-%'")
	}
	return out
}
