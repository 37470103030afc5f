package conformance

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wantTables are tables each migration must create, by the binary running
// it: the lookout schema (which the server also uses for queues) and the
// scheduler schema.
var wantTables = map[string][]string{
	"lookout":   {"job", "job_run", "queue", "retry_policy"},
	"scheduler": {"executors", "jobs", "runs"},
}

// RunMigration runs a Job's container twice: both runs must exit 0, the
// second proving the migration is idempotent.
func RunMigration(t *testing.T, e *Env, svc *Services, free func() int, rn *Run) {
	t.Helper()
	extra, _ := overrides(t, e, svc, free, rn)
	for i := 1; i <= 2; i++ {
		logPath := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.log", rn.Inv.Component, i))
		bin, args, err := rn.Command(e)
		if err != nil {
			t.Fatal(err)
		}
		p, err := startProcess(t, bin, e.SourceDir, args, environ(rn, extra), logPath)
		if err != nil {
			t.Fatal(err)
		}
		ShowTail(t, rn, p)
		code, ok := p.Wait(migrationTimeout)
		if !ok {
			t.Fatalf("%s: run %d did not finish within %s", rn.ID(), i, migrationTimeout)
		}
		if code != 0 {
			t.Fatalf("%s: run %d exited %d, want 0", rn.ID(), i, code)
		}
		if i == 1 {
			checkConfig(t, rn, p.Log())
		}
	}
}

// CheckTables checks every migrated database holds the expected tables.
func CheckTables(t *testing.T, svc *Services, runs []*Run) {
	t.Helper()
	for _, rn := range runs {
		want, ok := wantTables[rn.Inv.Component]
		if !rn.Job || !ok {
			continue
		}
		db, _ := rn.Effective("postgres.connection.dbname")
		out, err := svc.PG.Exec(db, "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables "+
			"WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")
		if err != nil {
			t.Errorf("%s: cannot list the tables of database %s: %v", rn.ID(), db, err)
			continue
		}
		have := strings.Split(out, ",")
		for _, w := range want {
			if !slices.Contains(have, w) {
				t.Errorf("%s: database %s has no table %s after migrating; it has: %s", rn.ID(), db, w, out)
			}
		}
	}
}
