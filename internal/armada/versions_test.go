package armada

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// migrationDirs are where each database's migrations live in Armada's
// source, embedded into the binary that runs them.
var migrationDirs = map[string]string{
	dbScheduler: "internal/scheduler/database/migrations",
	dbLookout:   "internal/lookout/schema/migrations",
}

// TestReleaseFacts checks every row of the version table against the
// release's source in the module cache: the schema version its migrations
// reach.
func TestReleaseFacts(t *testing.T) {
	for _, r := range Releases {
		t.Run(r.Version, func(t *testing.T) {
			dir, err := testutil.ModuleDir(t.Context(), "github.com/armadaproject/armada", "v"+r.Version)
			if err != nil {
				t.Fatal(err)
			}
			schema := map[string]int{}
			for db, rel := range migrationDirs {
				schema[db] = newestMigration(t, filepath.Join(dir, rel))
			}
			if diff := cmp.Diff(schema, r.Schema); diff != "" {
				t.Errorf("Releases[%s].Schema: -source, +table:\n%s", r.Version, diff)
			}
		})
	}
}

// newestMigration is the highest id of the NNN_name.sql files in dir, as
// Armada's database.ReadMigrations numbers them.
func newestMigration(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	newest := 0
	for _, e := range entries {
		m := regexp.MustCompile(`^(\d+)_.*\.sql$`).FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		newest = max(newest, id)
	}
	if newest == 0 {
		t.Fatalf("no migrations in %s", dir)
	}
	return newest
}

// TestVersionTable checks the table's shape: versions ascend, the newest
// is the default, and every row's schema covers both databases.
func TestVersionTable(t *testing.T) {
	if !slices.IsSortedFunc(Releases, func(a, b Release) int { return compareVersions(a.Version, b.Version) }) {
		t.Errorf("Releases are not oldest first: %v", SupportedVersions)
	}
	if DefaultVersion != Releases[len(Releases)-1].Version {
		t.Errorf("DefaultVersion = %s, want the newest release %s", DefaultVersion, Releases[len(Releases)-1].Version)
	}
	for _, r := range Releases {
		for _, db := range []string{dbScheduler, dbLookout} {
			if r.Schema[db] == 0 {
				t.Errorf("Releases[%s].Schema has no %s schema version", r.Version, db)
			}
		}
	}
}
