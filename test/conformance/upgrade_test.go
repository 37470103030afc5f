package conformance

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// addedColumns are the columns a scheduler migration adds, by the schema
// version it brings the database to: 041_add_requestor.sql (Armada 0.22.8)
// adds who reprioritised a job and who asked to preempt a run. Each must be
// absent below that version and present from it on.
var addedColumns = map[int][]string{
	41: {"jobs.reprioritise_user", "runs.preempt_user"},
}

// TestArmadaUpgrade upgrades one Armada through every release of the
// version table, oldest first (0.22.6 → 0.22.7 → 0.22.8), on one private
// PostgreSQL and Redis. At each release it
//
//  1. renders the claim (examples/minimal.yaml at that spec.version) through
//     the real Crossplane CLI and function, from the composed resources the
//     previous release left, as the cluster would report them;
//  2. checks that the components using a database are held on the previous
//     release's images while the new migration Jobs are pending;
//  3. runs the rendered migration Jobs (their image's binary, args and
//     config) with that release's binaries against the previous release's
//     databases, and checks the schema: each database's recorded version
//     is the table's, and the columns a migration adds appear exactly when
//     it has run; and runs the topic-init Job's script against the real
//     Pulsar broker (a second run finds the topics there);
//  4. reports the Jobs complete, renders again and checks every component
//     now runs the new release;
//  5. starts every component with that release's binaries on the migrated
//     databases and the real Pulsar broker and checks it as
//     TestArmadaConformance does (ready by its readinessProbe; the
//     executor past its config to the Kubernetes API).
//
// Finally a render back to the previous release must be refused.
//
// What stands in for the cluster: the observed state fed back to each
// render marks every composed Job complete and every workload available
// (internal/harness/simulate), which the test does only after the Jobs it ran
// exited 0 and the components it started passed their checks.
func TestArmadaUpgrade(t *testing.T) {
	if len(armada.Releases) < 2 {
		t.Fatalf("the version table has %d release; an upgrade needs two", len(armada.Releases))
	}
	tools, addr := xprender.ServeForTest(t, "upgrade-test-key")
	docs, err := manifest.ReadDocs(testutil.Example("minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xr, err := xprender.ClaimToXR(docs)
	if err != nil {
		t.Fatal(err)
	}
	u := &upgrade{
		tools:    tools,
		opt:      xprender.RenderOptions{XR: xr, Composition: testutil.Path("package", "xarmada", "composition.yaml"), XRD: testutil.Path("package", "xarmada", "definition.yaml"), FunctionAddress: addr},
		observed: t.TempDir(),
		free:     conformance.NewPorts(t).Free,
	}

	// The private PostgreSQL and Redis outlive every release's subtest.
	u.setVersion(armada.Releases[0].Version)
	first, err := u.tools.Render(t.Context(), u.opt)
	if err != nil {
		t.Fatal(err)
	}
	r, err := conformance.ParseRender(first)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := r.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	_, token := r.XRSecretRef("pulsar", "tokenSecretRef")
	u.svc, u.supplied = conformance.StartServices(t, r, workloads, conformance.StartBrokers(t, token))

	var previous string
	for _, rel := range armada.Releases {
		start := time.Now()
		if !t.Run(rel.Version, func(t *testing.T) { u.step(t, rel, previous) }) {
			t.Fatalf("upgrade to Armada %s failed; later releases not tried", rel.Version)
		}
		t.Logf("Armada %s: step done in %s", rel.Version, time.Since(start).Round(time.Second))
		previous = rel.Version
	}

	// A downgrade is refused, naming the field.
	older := armada.Releases[len(armada.Releases)-2].Version
	u.setVersion(older)
	_, err = u.tools.Render(t.Context(), u.withObserved())
	if err == nil || !strings.Contains(err.Error(), "spec.version: Forbidden: cannot downgrade Armada from "+previous+" to "+older) {
		t.Errorf("rendering a downgrade to %s: error %v, want the spec.version downgrade refusal", older, err)
	}
}

// upgrade is the state the releases' steps share.
type upgrade struct {
	tools xprender.Tools
	opt   xprender.RenderOptions
	// observed is the directory of composed resources fed back to renders.
	observed string
	// rendered says whether observed holds anything yet.
	rendered bool
	free     func() int
	// svc and supplied are the private services and the Secret values the
	// render does not hold.
	svc      *conformance.Services
	supplied map[conformance.SecretRef]string
}

func (u *upgrade) setVersion(v string) {
	spec, _ := u.opt.XR["spec"].(map[string]any)
	spec["version"] = v
}

func (u *upgrade) withObserved() xprender.RenderOptions {
	opt := u.opt
	if u.rendered {
		opt.Observed = u.observed
	}
	return opt
}

// render renders the claim from the observed state and records its
// composed resources, healthy, as the next render's observed state.
func (u *upgrade) render(t *testing.T) *conformance.Render {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := u.tools.Render(ctx, u.withObserved())
	if err != nil {
		t.Fatal(err)
	}
	r, err := conformance.ParseRender(out)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.Split(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := xprender.WriteObserved(u.observed, xprender.Composed(docs)); err != nil {
		t.Fatal(err)
	}
	u.rendered = true
	return r
}

// step installs (previous empty) or upgrades to one release.
//
//nolint:thelper // Each step is its own subtest: failures point into it, not at t.Run.
func (u *upgrade) step(t *testing.T, rel armada.Release, previous string) {
	v := rel.Version
	e := conformance.NewEnv(t, v)
	u.setVersion(v)

	// 1. Render from what the previous release left. An upgrade first
	// suspends the running release's database pruners and holds its
	// migrations until they are observed suspended; the next render,
	// observing them so, composes the migration Jobs.
	r := u.render(t)
	if previous != "" {
		if c, _ := manifest.ConditionOf(r.XR, armada.ConditionMigrations); c.Reason != armada.ReasonWaitingForPruning {
			t.Errorf("Armada %s: the first render of the upgrade has %s = %v, want reason %s", v, armada.ConditionMigrations, c, armada.ReasonWaitingForPruning)
		}
		r = u.render(t)
	}
	workloads, err := r.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	runs, _, topics, _ := conformance.NewRuns(t, e, r, workloads, u.supplied)
	if previous == "" {
		conformance.PrepareDatabases(t, r, u.svc, runs)
	}

	// 2. Components with a database are held until the migrations run.
	jobs := 0
	var held []string
	for _, rn := range runs {
		switch {
		case rn.Job:
			jobs++
			if rn.Inv.Tag != v {
				t.Errorf("Armada %s: migration %s runs image tag %s", v, rn.ID(), rn.Inv.Tag)
			}
		case previous == "" || !rn.Cfg.Has("postgres.connection.host"):
		case rn.Inv.Tag != previous:
			t.Errorf("Armada %s: %s runs %s before the new migrations completed; want it held on %s", v, rn.ID(), rn.Inv.Tag, previous)
		default:
			held = append(held, rn.Inv.Component)
		}
	}
	if previous != "" {
		if len(held) == 0 {
			t.Errorf("Armada %s: no component using a database was held on %s", v, previous)
		}
		t.Logf("Armada %s: held on %s while its migrations are pending: %s", v, previous, strings.Join(held, ", "))
	}
	if jobs != len(rel.Schema) {
		t.Fatalf("Armada %s: the render has %d migration Jobs, want one per database (%d)", v, jobs, len(rel.Schema))
	}
	if c, _ := manifest.ConditionOf(r.XR, armada.ConditionMigrations); c.Status != "False" {
		t.Errorf("Armada %s: before its migrations ran, %s = %v, want False", v, armada.ConditionMigrations, c)
	}

	// 3. Run the new migrations on the previous release's databases.
	start := time.Now()
	runMigrations(t, e, u.svc, u.free, runs)
	runTopicJobs(t, e, u.svc, topics, runs)
	if t.Failed() {
		t.Fatalf("Armada %s: stopping here; see the failures above", v)
	}
	t.Logf("Armada %s: %d migration Jobs ran (twice each) in %s", v, jobs, time.Since(start).Round(10*time.Millisecond))
	conformance.CheckTables(t, u.svc, runs)
	u.checkSchema(t, rel, runs)

	// 4. With the Jobs complete, every component moves to the release.
	r = u.render(t)
	if workloads, err = r.Workloads(); err != nil {
		t.Fatal(err)
	}
	runs, workloadOf, _, _ := conformance.NewRuns(t, e, r, workloads, u.supplied)
	for _, rn := range runs {
		if rn.Inv.Tag != v {
			t.Errorf("Armada %s: after its migrations completed, %s still runs %s", v, rn.ID(), rn.Inv.Tag)
		}
	}
	if c, _ := manifest.ConditionOf(r.XR, armada.ConditionMigrations); c.Status != "True" {
		t.Errorf("Armada %s: after its migrations ran, %s = %v, want True", v, armada.ConditionMigrations, c)
	}

	// 5. Every component starts on the migrated databases.
	start = time.Now()
	conformance.CheckWiring(t, runs)
	conformance.StartStandIns(t, u.svc, r, runs, workloadOf)
	started := runComponents(t, e, u.svc, u.free, runs)
	t.Logf("Armada %s: %d components started and checked in %s", v, started, time.Since(start).Round(time.Second))
}

// checkSchema checks each migrated database is at the schema version the
// release's row gives, and that the columns migrations add are there
// exactly from the version that adds them.
func (u *upgrade) checkSchema(t *testing.T, rel armada.Release, runs []*conformance.Run) {
	t.Helper()
	dbs := map[string]string{}
	for _, rn := range runs {
		if rn.Job {
			db, _ := rn.Effective("postgres.connection.dbname")
			dbs[rn.Inv.Component] = db
		}
	}
	// The migration Jobs run the lookout and scheduler binaries, named as
	// the databases they migrate.
	for component, db := range dbs {
		want, ok := rel.Schema[component]
		if !ok {
			t.Errorf("Armada %s: migration Job runs %s, which migrates no database of the table", rel.Version, component)
			continue
		}
		got, err := u.svc.PG.Exec(db, "SELECT last_value FROM database_version")
		if err != nil {
			t.Errorf("Armada %s: cannot read the schema version of database %s: %v", rel.Version, db, err)
			continue
		}
		if got != strconv.Itoa(want) {
			t.Errorf("Armada %s: database %s is at schema version %s after its migration, want %d", rel.Version, db, got, want)
		} else {
			t.Logf("Armada %s: database %s at schema version %s", rel.Version, db, got)
		}
	}
	db, ok := dbs["scheduler"]
	if !ok {
		t.Errorf("Armada %s: no migration Job migrates the scheduler database", rel.Version)
		return
	}
	out, err := u.svc.PG.Exec(db, "SELECT string_agg(table_name || '.' || column_name, ',' ORDER BY table_name, column_name) "+
		"FROM information_schema.columns WHERE table_schema = 'public'")
	if err != nil {
		t.Fatalf("cannot list the columns of database %s: %v", db, err)
	}
	have := strings.Split(out, ",")
	for _, version := range slices.Sorted(maps.Keys(addedColumns)) {
		for _, col := range addedColumns[version] {
			want := rel.Schema["scheduler"] >= version
			if got := slices.Contains(have, col); got != want {
				t.Errorf("Armada %s (scheduler schema %d): column %s present = %t, want %t (migration %03d adds it)",
					rel.Version, rel.Schema["scheduler"], col, got, want, version)
			}
		}
	}
}
