package backups

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// drillPod is the composed restore drill's container: its command and
// environment, as the CronJob's pod template has them.
type drillPod struct {
	Command []string
	Env     []corev1.EnvVar
}

// drill reads the composed restore drill CronJob of a render.
func (c *composed) drill(t *testing.T) drillPod {
	t.Helper()
	for _, o := range c.Objects {
		cj, ok := o.(*batchv1.CronJob)
		if !ok || !strings.HasSuffix(cj.Name, "-restore-drill") {
			continue
		}
		ctr := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
		return drillPod{Command: ctr.Command, Env: ctr.Env}
	}
	t.Fatal("the render composes no restore drill CronJob")
	return drillPod{}
}

// drillRun is one run of the drill: its output and whether it passed.
type drillRun struct {
	Output string
	Passed bool
}

// run runs the drill's composed command as a local process, as the
// postgres user (the image's uid 26 there, which PostgreSQL needs: it
// refuses root), with the composed environment, each Secret reference
// resolved from secrets. Stand-ins, for what a kubelet and the cluster
// provide: PGHOST and PGPORT point at pg instead of the -rw Service,
// SCRATCH and HOME at a directory in place of the ephemeral volume, and
// PATH has Debian's PostgreSQL binaries, which the image has on its PATH.
func (d drillPod) run(t *testing.T, pg *testenv.Postgres, secrets map[string]map[string]string) drillRun {
	t.Helper()
	env := make([]string, 0, len(d.Env)+5)
	env = append(env, "PATH="+testenv.PostgresBinDir+":"+os.Getenv("PATH"))
	for _, e := range d.Env {
		v := e.Value
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			var ok bool
			if v, ok = secrets[ref.Name][ref.Key]; !ok {
				t.Fatalf("the drill reads %s from key %q of Secret %q, which does not exist", e.Name, ref.Key, ref.Name)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	// Not t.TempDir: the postgres user must reach it.
	scratch, err := os.MkdirTemp("", "armada-drill-") //nolint:usetesting // See above.
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(scratch) })
	env = append(env, "PGHOST="+pg.Host, "PGPORT="+strconv.Itoa(pg.Port), "SCRATCH="+scratch, "HOME="+scratch)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Command[0], d.Command[1:]...) //nolint:gosec // The composed command, run as the pod would.
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(scratch, uid, gid); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}} //nolint:gosec // Ids of a system user.
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("the drill did not run: %v\n%s", err, out)
	}
	t.Logf("drill ran in %s:\n%s", time.Since(start).Round(10*time.Millisecond), out)
	return drillRun{Output: string(out), Passed: err == nil}
}

// TestRestoreDrill runs the composed restore drill, as its pod would, on
// a real backup: a PostgreSQL migrated by the composed migration Jobs
// (Armada's own binaries) archives its WAL and takes base backups with
// Barman's cloud tools into a real S3-compatible server, with exactly the
// parameters the composed ObjectStore names. The drill then restores the
// newest backup with Barman's tools into a scratch PostgreSQL and checks
// it against the running database, and is seen to
//   - fail when the newest backup's job tables are empty but the running
//     database's are not (the backup predates the jobs),
//   - pass once a newer backup holds them (it picks the newest),
//   - fail when the running database is at another migration,
//   - fail when an object of the backup in the bucket is damaged.
func TestRestoreDrill(t *testing.T) {
	for _, tool := range []string{"barman-cloud-backup", "barman-cloud-backup-list", "barman-cloud-wal-archive", "barman-cloud-restore", "barman-cloud-wal-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: `make system-deps` installs Debian's barman-cli-cloud", tool)
		}
	}
	s3 := testenv.StartS3(t)
	s3.CreateBucket(t, "armada-backups")
	secrets := map[string]map[string]string{secretName: {keyID: s3.AccessKey, keySecret: s3.SecretKey}}
	r := render(t, s3.Endpoint, secrets)
	d := r.drill(t)
	pg := testenv.StartPostgresWith(t, testenv.PostgresOptions{Settings: []string{
		"archive_mode=on",
		"archive_command=" + r.barman("barman-cloud-wal-archive", r.Destination, r.Server) + " %p",
		"archive_timeout=0",
	}})
	secrets[r.AppSecret.Name] = map[string]string{r.AppSecret.Key: migrate(t, pg, r)}
	backup := func() string {
		t.Helper()
		pgEnv := []string{"PGPASSWORD=" + pg.SuperuserPassword, "PGSSLMODE=prefer"}
		_ = run(t, pg, pgEnv, r.barman("barman-cloud-backup", "--immediate-checkpoint", "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", "postgres", r.Destination, r.Server))
		lsn := pg.MustExec(t, "postgres", "SELECT pg_walfile_name(pg_current_wal_lsn())")
		pg.MustExec(t, "postgres", "SELECT pg_switch_wal()")
		waitArchived(t, pg, lsn)
		return lsn
	}
	schema := armada.Releases[len(armada.Releases)-1].Schema
	for _, db := range []string{"scheduler", "lookout"} {
		if got := pg.MustExec(t, db, "SELECT last_value FROM database_version"); got != strconv.Itoa(schema[db]) {
			t.Fatalf("the %s database is at migration %s after the composed migration Jobs, want %d", db, got, schema[db])
		}
	}

	// A backup taken before any job, then jobs: the newest backup's job
	// tables are empty while the running database's are not.
	backup()
	writeQueue(t, pg, "team-a", 1)
	writeJobs(t, pg, "team-a", 1, 40, "succeeded")
	got := d.run(t, pg, secrets)
	if got.Passed || !strings.Contains(got.Output, "scheduler: the restored jobs table is empty, the running one has 40 rows") {
		t.Fatalf("the drill of a backup without the running database's jobs passed or failed for another reason:\n%s", got.Output)
	}

	// A newer backup holds them: the drill restores it and passes.
	backup()
	got = d.run(t, pg, secrets)
	want := fmt.Sprintf("scheduler at migration %d, 40 jobs rows (running: 40); lookout at migration %d, 40 job rows (running: 40)", schema["scheduler"], schema["lookout"])
	if !got.Passed || !strings.Contains(got.Output, "restore drill passed") || !strings.Contains(got.Output, want) {
		t.Fatalf("the drill of the newest backup did not pass with %q:\n%s", want, got.Output)
	}

	// The running database at another migration than the backup's.
	pg.MustExec(t, "lookout", fmt.Sprintf("SELECT setval('database_version', %d)", schema["lookout"]+1))
	got = d.run(t, pg, secrets)
	if got.Passed || !strings.Contains(got.Output, fmt.Sprintf("lookout: the restored database is at migration %d, the running one at %d", schema["lookout"], schema["lookout"]+1)) {
		t.Fatalf("the drill passed with the running database at another migration, or failed for another reason:\n%s", got.Output)
	}
	pg.MustExec(t, "lookout", fmt.Sprintf("SELECT setval('database_version', %d)", schema["lookout"]))

	// Damage the first WAL segment the newest backup needs in the bucket:
	// the data restores, recovery cannot reach the consistent point.
	var list struct {
		Backups []struct {
			ID       string `json:"backup_id"`
			BeginWAL string `json:"begin_wal"`
		} `json:"backups_list"`
	}
	if err := json.Unmarshal([]byte(run(t, pg, nil, r.barman("barman-cloud-backup-list", "--format", "json", r.Destination, r.Server))), &list); err != nil || len(list.Backups) != 2 {
		t.Fatalf("the object store lists %d backups of %s (%v), want the two taken", len(list.Backups), r.Server, err)
	}
	newest := list.Backups[len(list.Backups)-1]
	var segment string
	for _, k := range s3.Keys(t, "armada-backups") {
		if strings.HasPrefix(k, "prod/armada-postgres/wals/") && strings.TrimSuffix(filepath.Base(k), ".gz") == newest.BeginWAL {
			segment = k
		}
	}
	if segment == "" {
		t.Fatalf("the WAL segment %s of backup %s is not in the bucket: %v", newest.BeginWAL, newest.ID, s3.Keys(t, "armada-backups"))
	}
	wal, err := os.ReadFile(s3.ObjectFile("armada-backups", segment))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s3.ObjectFile("armada-backups", segment), []byte("not a WAL segment"), 0o600); err != nil {
		t.Fatal(err)
	}
	got = d.run(t, pg, secrets)
	if got.Passed || !strings.Contains(got.Output, "restore drill FAILED: backup "+newest.ID+" of armada-postgres did not recover") {
		t.Fatalf("the drill of a backup whose WAL object %s is damaged did not fail recovering it:\n%s", segment, got.Output)
	}
	if err := os.WriteFile(s3.ObjectFile("armada-backups", segment), wal, 0o600); err != nil {
		t.Fatal(err)
	}

	// Damage the newest base backup's data in the bucket.
	var damaged string
	for _, k := range s3.Keys(t, "armada-backups") {
		if strings.HasPrefix(k, "prod/armada-postgres/base/") && strings.HasPrefix(filepath.Base(k), "data.tar") && k > damaged {
			damaged = k
		}
	}
	if damaged == "" {
		t.Fatalf("no base backup data in the bucket: %v", s3.Keys(t, "armada-backups"))
	}
	if err := os.WriteFile(s3.ObjectFile("armada-backups", damaged), []byte("not a tar archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	got = d.run(t, pg, secrets)
	if got.Passed || !strings.Contains(got.Output, "restore drill FAILED: cannot restore backup") {
		t.Fatalf("the drill of a backup whose object %s is damaged did not fail restoring it:\n%s", damaged, got.Output)
	}
}
