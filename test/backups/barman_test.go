// Package backups runs a real Barman Cloud round trip with the parameters
// function-armada composes for spec.postgres.backup: CloudNativePG and its
// Barman Cloud Plugin do not run here (no kubelet runs their pods), so the
// test plays their part with Barman's own cloud tools (Debian's
// barman-cli-cloud, the same tools the plugin's sidecar runs) against a
// private PostgreSQL and a real S3-compatible server on loopback. The
// PostgreSQL's scheduler and Lookout databases are migrated by the
// composed migration Jobs, run by package podrun as Armada's own binaries
// at the composed release, and hold queues and jobs in Armada's schema.
package backups

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
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

// composed is what the test reads of a render: the Barman parameters, and
// what the migration Jobs need of CloudNativePG.
type composed struct {
	rendered
	Namespace string
	// Objects are the render's typed objects: Jobs, Secrets, ConfigMaps.
	Objects []client.Object
	// Jobs are the migration Jobs' names.
	Jobs []string
	// AppSecret is the CloudNativePG app Secret key the Jobs read their
	// database password from; DBUser the user their configs connect as,
	// DBAddr the host:port; Databases the composed CloudNativePG
	// Databases' owners, by database.
	AppSecret      corev1.SecretKeySelector
	DBUser, DBAddr string
	Databases      map[string]string
}

// render composes an Armada with backups to s3 and reads the composed
// ObjectStore back, resolving its Secret references against secrets.
func render(t *testing.T, endpoint string, secrets map[string]map[string]string) *composed {
	t.Helper()
	spec := v1alpha1.ArmadaSpec{
		Namespace: "armada",
		Postgres: v1alpha1.Postgres{Mode: "InCluster", Backup: &v1alpha1.PostgresBackup{ObjectStore: &v1alpha1.BackupObjectStore{
			EndpointURL: endpoint, Bucket: "armada-backups", Path: "prod",
			AccessKeyIDSecretRef:     v1alpha1.SecretKeyRef{Name: secretName, Key: keyID},
			SecretAccessKeySecretRef: v1alpha1.SecretKeyRef{Name: secretName, Key: keySecret},
		}}},
		Redis:  v1alpha1.Redis{Addrs: []string{"redis:6379"}},
		Pulsar: v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
		Auth:   v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin"}}},
	}
	// The migration Jobs are composed once the Cluster and its Databases
	// are ready: render again with everything composed observed ready,
	// as Crossplane would reconcile.
	var out *armada.Output
	var observed armada.Observed
	for range 3 {
		in, errs := armada.New(armada.XR{Name: "armada", Spec: *spec.DeepCopy()})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		var err error
		if out, err = armada.Render(in, armada.Options{Observed: observed, Rand: armada.KeyedRand([]byte("test"), "xr")}); err != nil {
			t.Fatal(err)
		}
		observed = observeReady(t, out)
	}
	c := &composed{Namespace: "armada", Databases: map[string]string{}}
	manifests := map[string]map[string]any{}
	for _, o := range out.Objects {
		switch obj := o.Object.(type) {
		case *unstructured.Unstructured:
			m, _, _ := unstructured.NestedMap(obj.Object, "spec", "forProvider", "manifest")
			manifests[o.Key] = m
			if obj.GetKind() == "Database" && strings.HasPrefix(obj.GetAPIVersion(), "postgresql.cnpg.io/") {
				name, _, _ := unstructured.NestedString(obj.Object, "spec", "name")
				owner, _, _ := unstructured.NestedString(obj.Object, "spec", "owner")
				c.Databases[name] = owner
			}
		case *batchv1.Job:
			if !strings.Contains(obj.Name, "-migrate-") {
				continue
			}
			c.Jobs = append(c.Jobs, obj.Name)
			c.readJob(t, obj, out.Objects)
		}
		c.Objects = append(c.Objects, o.Object)
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
	c.rendered = rendered{
		Destination: str(store, append(cfg, "destinationPath")...),
		Endpoint:    str(store, append(cfg, "endpointURL")...),
		// The plugin's server name defaults to the Cluster's name.
		Server:    str(cluster, "metadata", "name"),
		AccessKey: ref(store, append(cfg, "s3Credentials", "accessKeyId")...),
		SecretKey: ref(store, append(cfg, "s3Credentials", "secretAccessKey")...),
	}
	return c
}

// observeReady observes every object a render composed, as composed and
// ready.
func observeReady(t *testing.T, out *armada.Output) armada.Observed {
	t.Helper()
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range out.Objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		seen[o.Key] = &unstructured.Unstructured{Object: m}
	}
	o := armada.Observe(seen).WithServices(out.Status.BackingServices)
	for k := range seen {
		o.Ready[k] = true
	}
	return o
}

// readJob reads where a migration Job connects: the Secret key its
// password comes from, and its config's user, host and port.
func (c *composed) readJob(t *testing.T, j *batchv1.Job, objs []armada.Object) {
	t.Helper()
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "ARMADA_POSTGRES_CONNECTION_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			c.AppSecret = *e.ValueFrom.SecretKeyRef
		}
	}
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		for _, o := range objs {
			s, ok := o.Object.(*corev1.Secret)
			if !ok || s.Name != v.Secret.SecretName {
				continue
			}
			var cfg struct {
				Postgres struct {
					Connection struct{ User, Host, Port string }
				}
			}
			if err := yaml.Unmarshal(s.Data["config.yaml"], &cfg); err != nil {
				t.Fatalf("Job %s's config: %v", j.Name, err)
			}
			conn := cfg.Postgres.Connection
			c.DBUser, c.DBAddr = conn.User, net.JoinHostPort(conn.Host, conn.Port)
		}
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
// composition renders, once its scheduler and Lookout databases are
// migrated by the composed migration Jobs (Armada's own binaries at the
// composed release) and hold queues and jobs; writes more rows, restores
// into a new data directory from the base backup and the archived WAL,
// starts it and compares the queues and jobs of both databases.
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
	start := time.Now()
	migrate(t, pg, r)
	t.Logf("the composed migration Jobs migrated the scheduler and lookout databases in %s", time.Since(start).Round(10*time.Millisecond))
	writeQueue(t, pg, "team-a", 1)
	writeQueue(t, pg, "team-b", 2)
	writeJobs(t, pg, "team-a", 1, 100, "succeeded")
	pgEnv := []string{"PGPASSWORD=" + pg.SuperuserPassword, "PGSSLMODE=prefer"}
	start = time.Now()
	_ = run(t, pg, pgEnv, r.barman("barman-cloud-backup", "--immediate-checkpoint", "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", "postgres", r.Destination, r.Server))

	// Rows written after the base backup come back only through the
	// archived WAL.
	writeJobs(t, pg, "team-b", 101, 150, "queued")
	writeQueue(t, pg, "team-b", 3)
	writeQueue(t, pg, "team-c", 1)
	want := armadaRows(t, pg)
	lsn := pg.MustExec(t, "postgres", "SELECT pg_walfile_name(pg_current_wal_lsn())")
	pg.MustExec(t, "postgres", "SELECT pg_switch_wal()")
	waitArchived(t, pg, lsn)
	t.Logf("base backup taken and WAL archived in %s", time.Since(start).Round(10*time.Millisecond))
	start = time.Now()

	// Not t.TempDir: its parent directory is private to the test's user,
	// and the postgres user must reach this one.
	parent, err := os.MkdirTemp("", "armada-restore-") //nolint:usetesting // See above.
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
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
	if err := os.Chmod(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	again := testenv.StartPostgresWith(t, testenv.PostgresOptions{Data: restored, SuperuserPassword: pg.SuperuserPassword, Settings: []string{
		"archive_mode=off",
		"restore_command=" + r.barman("barman-cloud-wal-restore", r.Destination, r.Server) + " %f %p",
	}})
	waitPromoted(t, again)
	t.Logf("restored and recovered in %s", time.Since(start).Round(10*time.Millisecond))
	if len(want["lookout queues"]) != 3 || len(want["scheduler jobs"]) != 150 || len(want["lookout jobs"]) != 150 {
		t.Fatalf("the source holds %d queues, %d scheduler jobs and %d Lookout jobs, want 3, 150 and 150",
			len(want["lookout queues"]), len(want["scheduler jobs"]), len(want["lookout jobs"]))
	}
	if diff := cmp.Diff(want, armadaRows(t, again)); diff != "" {
		t.Errorf("restored rows differ from the source's (-source +restored):\n%s", diff)
	}
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
