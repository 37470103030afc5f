package conformance

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// CronJobs returns the composed CronJobs (the database pruners) as the
// Jobs they start: their job template's pod, named as the CronJob.
func (r *Render) CronJobs() ([]podrun.Workload, error) {
	var out []podrun.Workload
	for _, u := range r.Objects {
		if u.GetKind() != "CronJob" {
			continue
		}
		cj := &batchv1.CronJob{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cj); err != nil {
			return nil, errors.Wrapf(err, "cannot decode CronJob %s", u.GetName())
		}
		tpl := cj.Spec.JobTemplate.Spec.Template
		out = append(out, podrun.Workload{
			Kind: "Job", Name: u.GetName(), Namespace: u.GetNamespace(), Pod: tpl.Spec, Labels: tpl.Labels, Cluster: r.workerCluster(u),
		})
	}
	return out, nil
}

// StartDatabase starts a private PostgreSQL for workloads that use only
// a database (migration Jobs and pruners), reached at the render's
// PostgreSQL names, and supplies the password Secret they read.
func StartDatabase(t *testing.T, r *Render, workloads []podrun.Workload) (*Services, map[SecretRef]string) {
	t.Helper()
	svc := &Services{PG: testenv.StartPostgres(t), Names: newNames(t)}
	ref, ok := envSecretRef(workloads, "ARMADA_POSTGRES_CONNECTION_PASSWORD")
	if !ok {
		t.Fatal("no rendered workload reads ARMADA_POSTGRES_CONNECTION_PASSWORD from a Secret")
	}
	supplied := map[SecretRef]string{ref: testenv.RandomPassword(t)}
	far, err := r.FarEnds(workloads)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range far.Postgres {
		RelayName(t, svc.Names, a, net.JoinHostPort(svc.PG.Host, strconv.Itoa(svc.PG.Port)))
	}
	return svc, supplied
}

// RunOnce runs a Job's container once, as its pod would, and fails the
// test unless it exits 0 within timeout and uses every rendered config
// key. It returns how long the run took.
func RunOnce(t *testing.T, e *Env, svc *Services, free func() int, rn *Run, timeout time.Duration) time.Duration {
	t.Helper()
	extra, _ := overrides(t, e, svc, free, rn)
	bin, args, err := rn.Command(e)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := startProcess(t, bin, e.SourceDir, args, environ(rn, extra), filepath.Join(t.TempDir(), rn.Inv.Component+".log"))
	if err != nil {
		t.Fatal(err)
	}
	ShowTail(t, rn, p)
	code, ok := p.Wait(timeout)
	took := time.Since(start)
	if !ok {
		t.Fatalf("%s: did not finish within %s", rn.ID(), timeout)
	}
	if code != 0 {
		t.Fatalf("%s: exited %d, want 0", rn.ID(), code)
	}
	checkConfig(t, rn, p.Log())
	return took
}

// A Seed is a batch of rows the test writes into one table of an
// Armada database, as Armada's ingesters would have written them.
type Seed struct {
	// Table to insert into.
	Table string
	// From and To number the rows: i runs from From to To, and the
	// expressions below may use it.
	From, To int
	// Set are SQL expressions for columns, by column; every other column
	// that is NOT NULL without a default gets a value of its type (text
	// 'seed-<i>', numbers i, false, 1 KiB of bytes, now(), a UUID from
	// i). Set columns that may be NULL as needed.
	Set map[string]string
}

// SeedRows inserts the seed's rows in one statement, with triggers off
// (Armada's scheduler tables stamp last_modified on insert), and fails
// the test on error.
func SeedRows(t *testing.T, pg *testenv.Postgres, db string, s Seed) {
	t.Helper()
	out := pg.MustExec(t, db, "SELECT column_name || ' ' || data_type FROM information_schema.columns "+
		"WHERE table_schema = 'public' AND table_name = "+testenv.QuoteLiteral(s.Table)+
		" AND is_nullable = 'NO' AND column_default IS NULL AND is_generated = 'NEVER' ORDER BY ordinal_position")
	cols, vals := []string{}, []string{}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(out, "\n") {
		name, typ, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		seen[name] = true
		if _, set := s.Set[name]; set {
			continue
		}
		v, ok := seedValue(s.Table, typ)
		if !ok {
			t.Fatalf("table %s: column %s has type %s, which SeedRows cannot fill; set it", s.Table, name, typ)
		}
		cols, vals = append(cols, testenv.QuoteIdent(name)), append(vals, v)
	}
	for name, v := range s.Set {
		cols, vals = append(cols, testenv.QuoteIdent(name)), append(vals, v)
	}
	pg.MustExec(t, db, fmt.Sprintf("SET session_replication_role = replica; INSERT INTO %s (%s) SELECT %s FROM generate_series(%d, %d) AS i",
		testenv.QuoteIdent(s.Table), strings.Join(cols, ", "), strings.Join(vals, ", "), s.From, s.To))
}

// seedValue is a value of a column type for row i.
func seedValue(table, typ string) (string, bool) {
	switch typ {
	case "text", "character varying":
		return "'seed-' || i", true
	case "bigint", "integer":
		return "i", true
	case "smallint":
		return "(i % 1000)::smallint", true
	case "double precision", "numeric", "real":
		return "0", true
	case "boolean":
		return "false", true
	case "bytea":
		// 1 KiB, unlike from row to row: a compressed job spec's size.
		return "decode(repeat(md5(i::text), 64), 'hex')", true
	case "timestamp with time zone", "timestamp without time zone":
		return "now()", true
	case "uuid":
		return "md5(" + testenv.QuoteLiteral(table) + " || i)::uuid", true
	case "jsonb", "json":
		return "'{}'", true
	}
	return "", false
}

// DatabaseSize is a database's size on disk, in bytes.
func DatabaseSize(t *testing.T, pg *testenv.Postgres, db string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(pg.MustExec(t, db, "SELECT pg_database_size(current_database())"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Count is the number of rows a query counts.
func Count(t *testing.T, pg *testenv.Postgres, db, query string) int {
	t.Helper()
	n, err := strconv.Atoi(pg.MustExec(t, db, query))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
