// Package backups runs a real Barman Cloud round trip with the parameters
// function-armada composes for spec.postgres.backup: CloudNativePG and its
// Barman Cloud Plugin do not run here (no kubelet runs their pods), so the
// test plays their part with Barman's own cloud tools (Debian's
// barman-cli-cloud, the same tools the plugin's sidecar runs) against a
// private PostgreSQL and a real S3-compatible server on loopback.
package backups

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

// The claim's S3 credentials Secret, as a user would create it.
const (
	secretName = "armada-backup-s3"
	keyID      = "ACCESS_KEY_ID"
	keySecret  = "ACCESS_SECRET_KEY"
)

// rendered is what the composed ObjectStore and Cluster tell Barman: where
// to archive, with which credentials, under which server name.
type rendered struct {
	Destination, Endpoint, Server string
	AccessKey, SecretKey          string
}

// render composes an Armada with backups to s3 and reads the composed
// ObjectStore back, resolving its Secret references against secrets.
func render(t *testing.T, endpoint string, secrets map[string]map[string]string) rendered {
	t.Helper()
	in, errs := armada.New(armada.XR{Name: "armada", Spec: v1alpha1.ArmadaSpec{
		Namespace: "armada",
		Postgres: v1alpha1.Postgres{Mode: "InCluster", Backup: &v1alpha1.PostgresBackup{ObjectStore: &v1alpha1.BackupObjectStore{
			EndpointURL: endpoint, Bucket: "armada-backups", Path: "prod",
			AccessKeyIDSecretRef:     v1alpha1.SecretKeyRef{Name: secretName, Key: keyID},
			SecretAccessKeySecretRef: v1alpha1.SecretKeyRef{Name: secretName, Key: keySecret},
		}}},
		Redis:  v1alpha1.Redis{Addrs: []string{"redis:6379"}},
		Pulsar: v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
		Auth:   v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin"}}},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("test"), "xr")})
	if err != nil {
		t.Fatal(err)
	}
	manifests := map[string]map[string]any{}
	for _, o := range out.Objects {
		if u, ok := o.Object.(*unstructured.Unstructured); ok {
			m, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
			manifests[o.Key] = m
		}
	}
	str := func(m map[string]any, fields ...string) string {
		s, _, _ := unstructured.NestedString(m, fields...)
		return s
	}
	ref := func(m map[string]any, fields ...string) string {
		t.Helper()
		name, key := str(m, append(fields, "name")...), str(m, append(fields, "key")...)
		v, ok := secrets[name][key]
		if !ok {
			t.Fatalf("the composed ObjectStore reads key %q of Secret %q, which the user's Secrets do not have", key, name)
		}
		return v
	}
	store, cluster := manifests["postgres-cnpg-objectstore"], manifests["postgres-cnpg-cluster"]
	if store == nil || cluster == nil {
		t.Fatal("the ObjectStore or the Cluster is not composed")
	}
	cfg := []string{"spec", "configuration"}
	plugins, _, _ := unstructured.NestedSlice(cluster, "spec", "plugins")
	if len(plugins) != 1 || str(plugins[0].(map[string]any), "parameters", "barmanObjectName") != str(store, "metadata", "name") {
		t.Fatalf("the Cluster does not archive to the composed ObjectStore: plugins %v", plugins)
	}
	return rendered{
		Destination: str(store, append(cfg, "destinationPath")...),
		Endpoint:    str(store, append(cfg, "endpointURL")...),
		// The plugin's server name defaults to the Cluster's name.
		Server:    str(cluster, "metadata", "name"),
		AccessKey: ref(store, append(cfg, "s3Credentials", "accessKeyId")...),
		SecretKey: ref(store, append(cfg, "s3Credentials", "secretAccessKey")...),
	}
}

// barman is a Barman Cloud command line with the rendered parameters.
func (r rendered) barman(tool string, args ...string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	parts := make([]string, 0, 5+len(args))
	parts = append(parts, "AWS_ACCESS_KEY_ID="+q(r.AccessKey), "AWS_SECRET_ACCESS_KEY="+q(r.SecretKey), tool, "--endpoint-url", q(r.Endpoint))
	for _, a := range args {
		parts = append(parts, q(a))
	}
	return strings.Join(parts, " ")
}

// run runs a shell command line and returns its standard output; on
// failure it reports its output and the server log of pg.
func run(t *testing.T, pg *testenv.Postgres, env []string, shell string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", shell) //nolint:gosec // Barman's tools with the test's own arguments, quoted.
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s\nserver log:\n%s", shell, err, out, stderr.String(), pg.Log())
	}
	return string(out)
}

// TestBarmanRoundTrip archives a PostgreSQL's WAL and takes a base backup
// with exactly the endpoint, path, server name and credentials the
// composition renders, writes more rows, restores into a new data
// directory from the base backup and the archived WAL, starts it and
// compares the rows.
func TestBarmanRoundTrip(t *testing.T) {
	for _, tool := range []string{"barman-cloud-backup", "barman-cloud-wal-archive", "barman-cloud-restore", "barman-cloud-wal-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: `make system-deps` installs Debian's barman-cli-cloud", tool)
		}
	}
	s3 := testenv.StartS3(t)
	s3.CreateBucket(t, "armada-backups")
	r := render(t, s3.Endpoint, map[string]map[string]string{secretName: {keyID: s3.AccessKey, keySecret: s3.SecretKey}})

	pg := testenv.StartPostgresWith(t, testenv.PostgresOptions{Settings: []string{
		"archive_mode=on",
		"archive_command=" + r.barman("barman-cloud-wal-archive", r.Destination, r.Server) + " %p",
		"archive_timeout=0",
	}})
	pg.MustExec(t, "postgres", "CREATE DATABASE scheduler")
	pg.MustExec(t, "scheduler", "CREATE TABLE queues (name text PRIMARY KEY, priority_factor float8); "+
		"CREATE TABLE jobs (job_id text PRIMARY KEY, queue text REFERENCES queues(name), state text); "+
		"INSERT INTO queues VALUES ('team-a', 1), ('team-b', 2); "+
		"INSERT INTO jobs SELECT 'job-' || i, 'team-a', 'succeeded' FROM generate_series(1, 100) i")

	pgEnv := []string{"PGPASSWORD=" + pg.SuperuserPassword, "PGSSLMODE=prefer"}
	_ = run(t, pg, pgEnv, r.barman("barman-cloud-backup", "--immediate-checkpoint", "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", "postgres", r.Destination, r.Server))

	// Rows written after the base backup come back only through the
	// archived WAL.
	pg.MustExec(t, "scheduler", "INSERT INTO jobs SELECT 'job-' || i, 'team-b', 'running' FROM generate_series(101, 150) i")
	pg.MustExec(t, "scheduler", "UPDATE queues SET priority_factor = 3 WHERE name = 'team-b'")
	want := rows(t, pg)
	lsn := pg.MustExec(t, "postgres", "SELECT pg_walfile_name(pg_current_wal_lsn())")
	pg.MustExec(t, "postgres", "SELECT pg_switch_wal()")
	waitArchived(t, pg, lsn)

	// Not t.TempDir: its parent directory is private to the test's user,
	// and the postgres user must reach this one.
	parent, err := os.MkdirTemp("", "armada-restore-") //nolint:usetesting // See above.
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { //nolint:gosec // The postgres user must reach the data directory.
		t.Fatal(err)
	}
	restored := filepath.Join(parent, "data")

	// The backup and the WAL are where the claim asked: its bucket, under
	// its path and the cluster's name.
	var base, wals int
	for _, k := range s3.Keys(t, "armada-backups") {
		switch {
		case strings.HasPrefix(k, "prod/armada-postgres/base/"):
			base++
		case strings.HasPrefix(k, "prod/armada-postgres/wals/"):
			wals++
		}
	}
	if base == 0 || wals == 0 {
		t.Fatalf("bucket armada-backups holds %d base backup and %d WAL objects under prod/armada-postgres/, want both: %v", base, wals, s3.Keys(t, "armada-backups"))
	}
	var list struct {
		Backups []struct {
			ID string `json:"backup_id"`
		} `json:"backups_list"`
	}
	if err := json.Unmarshal([]byte(run(t, pg, nil, r.barman("barman-cloud-backup-list", "--format", "json", r.Destination, r.Server))), &list); err != nil || len(list.Backups) != 1 {
		t.Fatalf("the object store lists %d backups of %s (%v), want the one taken", len(list.Backups), r.Server, err)
	}
	_ = run(t, pg, nil, r.barman("barman-cloud-restore", r.Destination, r.Server, list.Backups[0].ID, restored))
	if err := os.WriteFile(filepath.Join(restored, "recovery.signal"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(restored, "postmaster.pid"))
	if err := os.Chmod(restored, 0o700); err != nil { //nolint:gosec // PostgreSQL requires its data directory 0700 (or 0750).
		t.Fatal(err)
	}
	again := testenv.StartPostgresWith(t, testenv.PostgresOptions{Data: restored, SuperuserPassword: pg.SuperuserPassword, Settings: []string{
		"archive_mode=off",
		"restore_command=" + r.barman("barman-cloud-wal-restore", r.Destination, r.Server) + " %f %p",
	}})
	waitPromoted(t, again)
	if diff := cmp.Diff(want, rows(t, again)); diff != "" {
		t.Errorf("restored rows differ from the source's (-source +restored):\n%s", diff)
	}
}

// rows are the source's rows, as psql prints them.
func rows(t *testing.T, pg *testenv.Postgres) []string {
	t.Helper()
	out := pg.MustExec(t, "scheduler", "SELECT q.name, q.priority_factor, j.job_id, j.state FROM jobs j JOIN queues q ON q.name = j.queue ORDER BY j.job_id")
	return strings.Split(out, "\n")
}

// waitArchived waits until the WAL file walFile has been archived.
func waitArchived(t *testing.T, pg *testenv.Postgres, walFile string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := pg.MustExec(t, "postgres", "SELECT coalesce(last_archived_wal, '') || ' ' || failed_count || ' ' || coalesce(last_failed_wal, '') FROM pg_stat_archiver")
		if last := strings.Fields(got); len(last) > 0 && last[0] >= walFile {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("WAL %s was not archived (pg_stat_archiver: %s); server log:\n%s", walFile, got, pg.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPromoted waits until a recovering server has replayed the archived
// WAL and left recovery.
func waitPromoted(t *testing.T, pg *testenv.Postgres) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := pg.Exec("postgres", "SELECT pg_is_in_recovery()")
		if err == nil && got == "f" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored server did not leave recovery (%s, %v); server log:\n%s", got, err, pg.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
