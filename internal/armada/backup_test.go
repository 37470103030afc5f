package armada

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// store is a valid object store; with path p.
func store(p string) *v1alpha1.BackupObjectStore {
	return &v1alpha1.BackupObjectStore{
		EndpointURL: "https://s3.storage.svc:9000", Bucket: "armada-backups", Path: p,
		AccessKeyIDSecretRef:     v1alpha1.SecretKeyRef{Name: "s3", Key: "id"},
		SecretAccessKeySecretRef: v1alpha1.SecretKeyRef{Name: "s3", Key: "secret"},
		CASecretRef:              &v1alpha1.SecretKeyRef{Name: "s3-ca", Key: "ca.crt"},
	}
}

// backupSpec is an in-cluster PostgreSQL with backups, at version.
func backupSpec(version string, mods ...func(*v1alpha1.ArmadaSpec)) v1alpha1.ArmadaSpec {
	return spec(append([]func(*v1alpha1.ArmadaSpec){func(s *v1alpha1.ArmadaSpec) {
		s.Version = version
		s.Postgres = v1alpha1.Postgres{Mode: modeInCluster, Backup: &v1alpha1.PostgresBackup{ObjectStore: store("prod")}}
	}}, mods...)...)
}

func TestBackupRestoreRefusals(t *testing.T) {
	p := field.NewPath("spec", "postgres")
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   field.ErrorList
	}{
		"Valid": {
			reason: "An in-cluster PostgreSQL with an object store and a restore from another cluster's backup is accepted.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store("prod"), ServerName: "old-postgres", TargetTime: "2026-12-01T10:00:00Z"}
			}),
		},
		"BackupOnExternal": {
			reason: "An External database is backed up by its provider, not the function.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup = &v1alpha1.PostgresBackup{ObjectStore: store("")} }),
			want:   field.ErrorList{field.Forbidden(p.Child("backup"), "")},
		},
		"RestoreOnExternal": {
			reason: "An External database is restored by its provider, not the function.",
			spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store(""), ServerName: "old-postgres"}
			}),
			want: field.ErrorList{field.Forbidden(p.Child("restore"), "")},
		},
		"BackupWithoutObjectStore": {
			reason: "Backups need somewhere to go.",
			spec:   backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup.ObjectStore = nil }),
			want:   field.ErrorList{field.Required(p.Child("backup", "objectStore"), "")},
		},
		"BadScheduleAndRetention": {
			reason: "CloudNativePG's schedule has six fields; retention is a number and d, w or m.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Backup.Schedule = "0 2 * * *"
				s.Postgres.Backup.Retention = "30"
			}),
			want: field.ErrorList{
				field.Invalid(p.Child("backup", "schedule"), "0 2 * * *", ""),
				field.Invalid(p.Child("backup", "retention"), "30", ""),
			},
		},
		"BadStore": {
			reason: "Bucket, path, endpoint and credentials are checked, each by field.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				o := s.Postgres.Backup.ObjectStore
				o.Bucket, o.Path, o.EndpointURL = "B", "/a/", "s3.example.com"
				o.SecretAccessKeySecretRef.Key = ""
			}),
			want: field.ErrorList{
				field.Invalid(p.Child("backup", "objectStore", "endpointURL"), "s3.example.com", ""),
				field.Invalid(p.Child("backup", "objectStore", "bucket"), "B", ""),
				field.Invalid(p.Child("backup", "objectStore", "path"), "/a/", ""),
				field.Required(p.Child("backup", "objectStore", "secretAccessKeySecretRef", "key"), ""),
			},
		},
		"BadTargetTime": {
			reason: "A point in time is an RFC 3339 time.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store("old"), ServerName: "old-postgres", TargetTime: "yesterday"}
			}),
			want: field.ErrorList{field.Invalid(p.Child("restore", "targetTime"), "yesterday", "")},
		},
		"RestoreIntoItsOwnArchive": {
			reason: "The restored cluster would archive WAL into the backup it restores from.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store("prod"), ServerName: "armada-postgres"}
			}),
			want: field.ErrorList{field.Invalid(p.Child("restore", "serverName"), "armada-postgres", "")},
		},
		"ComposedSecretAsCredentials": {
			reason: "A credentials Secret may not be one the function composes: the plugin would hand it to the object store.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.Backup.ObjectStore.SecretAccessKeySecretRef.Name = "armada-postgres-superuser"
				s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store("old"), ServerName: "old-postgres"}
				s.Postgres.Restore.ObjectStore.CASecretRef.Name = "armada-tls"
			}),
			want: field.ErrorList{
				field.Invalid(p.Child("backup", "objectStore", "secretAccessKeySecretRef", "name"), "armada-postgres-superuser", ""),
				field.Invalid(p.Child("restore", "objectStore", "caSecretRef", "name"), "armada-tls", ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := New(claimed(tc.spec))
			if diff := cmp.Diff(tc.want, errs, cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// inClusterReady observes the in-cluster PostgreSQL and its databases
// ready, with the server running version from and jobs observed.
func inClusterReady(from string, jobs map[string]JobState) Observed {
	o := Observed{
		Ready:     map[string]bool{keyPostgresCluster: true, keyPostgresCNPGDB + "scheduler": true, keyPostgresCNPGDB + "lookout": true},
		Keys:      map[string]bool{keyPostgresCluster: true},
		Jobs:      jobs,
		Workloads: map[string]Workload{},
		Backups:   map[string]BackupObserved{},
	}
	if from != "" {
		o.Workloads["server"] = Workload{Version: from, Ready: true}
	}
	return o
}

func TestBackupBeforeUpgrade(t *testing.T) {
	from, to := Releases[len(Releases)-2].Version, Releases[len(Releases)-1].Version
	backup := "armada-postgres-pre-" + versionSuffix(to)
	key := keyPreUpgradeBackup + versionSuffix(to)
	// newJobs are the migration Jobs of to, observed running.
	newJobs := map[string]JobState{}
	for _, o := range render(t, backupSpec(to), inClusterReady("", nil)).Objects {
		if j, ok := o.Object.(*batchv1.Job); ok && strings.Contains(j.Name, "-migrate-") {
			newJobs[j.Name] = JobRunning
		}
	}
	if len(newJobs) != 2 {
		t.Fatalf("a new install composes %d migration Jobs, want 2", len(newJobs))
	}
	type want struct {
		backup     bool
		migrations bool
		reason     string
		server     string
		status     *v1alpha1.BackupRun
	}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		// What the render observes: the in-cluster PostgreSQL ready, the
		// server running at running (none if ""), jobs, the pre-upgrade
		// Backup as seen (nil: not observed) and what the XR's status
		// last reported (the Backup, then versions).
		running  string
		jobs     map[string]JobState
		seen     *BackupObserved
		reported []string
		want     want
	}{
		"NewInstall": {
			reason: "A new install has nothing to back up: migrations run at once.",
			spec:   backupSpec(to),
			want:   want{migrations: true, reason: ReasonRunning},
		},
		"UpgradeBackupNotObservedYet": {
			reason:  "A version change composes the Backup and holds the migrations; the server keeps running the old version.",
			spec:    backupSpec(to),
			running: from,
			want: want{
				backup: true, reason: ReasonWaitingForBackup, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupUnobserved},
			},
		},
		"UpgradeBackupRunning": {
			reason:  "A running Backup holds the migrations.",
			spec:    backupSpec(to),
			running: from, seen: &BackupObserved{Phase: "running", Time: "2026-12-02T10:00:00Z"},
			want: want{
				backup: true, reason: ReasonWaitingForBackup, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: "running", Time: "2026-12-02T10:00:00Z"},
			},
		},
		"UpgradeBackupPending": {
			reason:  "A Backup CloudNativePG has not started (no phase) holds the migrations.",
			spec:    backupSpec(to),
			running: from, seen: &BackupObserved{},
			want: want{backup: true, reason: ReasonWaitingForBackup, server: from, status: &v1alpha1.BackupRun{Name: backup}},
		},
		"UpgradeBackupCompleted": {
			reason:  "Once the Backup completed the migrations run.",
			spec:    backupSpec(to),
			running: from, seen: &BackupObserved{Phase: backupCompleted, Time: "2026-12-02T10:05:00Z"},
			want: want{
				backup: true, migrations: true, reason: ReasonRunning, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupCompleted, Time: "2026-12-02T10:05:00Z"},
			},
		},
		"UpgradeBackupFailed": {
			reason:  "A failed Backup holds the upgrade with its reason; running components are kept at the old version.",
			spec:    backupSpec(to),
			running: from, seen: &BackupObserved{Phase: backupFailed, Time: "2026-12-02T10:05:00Z"},
			want: want{
				backup: true, reason: ReasonBackupFailed, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupFailed, Time: "2026-12-02T10:05:00Z"},
			},
		},
		"MigrationsStartedBackupMissing": {
			reason:  "A migration already started is never dropped, nor is the Backup, when the Backup's observation is missing.",
			spec:    backupSpec(to),
			running: from, jobs: newJobs, reported: []string{backup},
			want: want{
				backup: true, migrations: true, reason: ReasonRunning, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupUnobserved},
			},
		},
		"OnlyStatusNamesBackup": {
			reason:   "With the Backup's and the workloads' observations missing, the Backup the XR's status named stays composed and holds the migrations.",
			spec:     backupSpec(to),
			reported: []string{backup, to},
			want: want{
				backup: true, reason: ReasonWaitingForBackup,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupUnobserved},
			},
		},
		"WorkloadsMissingStatusSaysOlder": {
			reason:   "With no workload observed, the version the XR's status last reported still shows an upgrade.",
			spec:     backupSpec(to),
			reported: []string{"", from, from},
			want: want{
				backup: true, reason: ReasonWaitingForBackup,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupUnobserved},
			},
		},
		"BackupKeptAfterUpgrade": {
			reason:  "Once every component runs the new version the Backup stays composed (its status still reported).",
			spec:    backupSpec(to),
			running: to, jobs: newJobs, seen: &BackupObserved{Phase: backupCompleted},
			want: want{
				backup: true, migrations: true, reason: ReasonRunning, server: to,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupCompleted},
			},
		},
		"BeforeUpgradeOff": {
			reason:  "beforeUpgrade: false upgrades without a Backup.",
			spec:    backupSpec(to, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup.BeforeUpgrade = ptr.To(false) }),
			running: from,
			want:    want{migrations: true, reason: ReasonRunning, server: from},
		},
		"FailedThenBeforeUpgradeOff": {
			reason:  "After a failed Backup, beforeUpgrade: false lets the upgrade go on; the Backup stays composed.",
			spec:    backupSpec(to, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup.BeforeUpgrade = ptr.To(false) }),
			running: from, seen: &BackupObserved{Phase: backupFailed},
			want: want{
				backup: true, migrations: true, reason: ReasonRunning, server: from,
				status: &v1alpha1.BackupRun{Name: backup, Phase: backupFailed},
			},
		},
		"NoBackups": {
			reason:  "Without spec.postgres.backup an upgrade migrates at once, as before.",
			spec:    backupSpec(to, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup = nil }),
			running: from,
			want:    want{migrations: true, reason: ReasonRunning, server: from},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := inClusterReady(tc.running, tc.jobs)
			if tc.seen != nil {
				observed.Backups[backup] = *tc.seen
			}
			if len(tc.reported) > 0 {
				observed = observed.WithStatus(tc.reported[0], tc.reported[1:]...)
			}
			out := render(t, tc.spec, observed)
			got := want{backup: find(out, key) != nil, migrations: find(out, "migrate-lookout-"+versionSuffix(to)+"-") != nil}
			for _, c := range out.Conditions {
				if c.Type == ConditionMigrations {
					got.reason = c.Reason
				}
			}
			if s := find(out, "server-workload"); s != nil {
				got.server = strings.TrimPrefix(s.Object.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image, "gresearch/armada-server:")
			}
			if b := out.Status.Backup; b != nil {
				got.status = b.LastBackup
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRender(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBackupObjects(t *testing.T) {
	s := backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
		s.Postgres.Restore = &v1alpha1.PostgresRestore{ObjectStore: *store("old"), ServerName: "old-postgres", TargetTime: "2026-12-01T10:00:00Z"}
	})
	out := render(t, s, Observed{})
	manifest := func(key string) map[string]any {
		t.Helper()
		o := find(out, key)
		if o == nil {
			t.Fatalf("%s is not composed", key)
		}
		m, _, _ := unstructured.NestedMap(o.Object.(*unstructured.Unstructured).Object, "spec", "forProvider", "manifest", "spec")
		return m
	}
	cluster := manifest(keyPostgresCluster)
	want := map[string]any{
		"plugins": []any{map[string]any{
			"name": barmanPluginName, "isWALArchiver": true,
			"parameters": map[string]any{"barmanObjectName": "armada-postgres-backup"},
		}},
		"bootstrap": map[string]any{"recovery": map[string]any{
			"source": "origin", "database": "armada", "owner": "armada",
			"recoveryTarget": map[string]any{"targetTime": "2026-12-01T10:00:00Z"},
		}},
		"externalClusters": []any{map[string]any{"name": "origin", "plugin": map[string]any{
			"name":       barmanPluginName,
			"parameters": map[string]any{"barmanObjectName": "armada-postgres-restore", "serverName": "old-postgres"},
		}}},
	}
	got := map[string]any{"plugins": cluster["plugins"], "bootstrap": cluster["bootstrap"], "externalClusters": cluster["externalClusters"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Cluster backup and recovery: -want, +got:\n%s", diff)
	}
	wantStore := map[string]any{
		"retentionPolicy": "30d",
		"configuration": map[string]any{
			"destinationPath": "s3://armada-backups/prod/",
			"endpointURL":     "https://s3.storage.svc:9000",
			"endpointCA":      map[string]any{"name": "s3-ca", "key": "ca.crt"},
			"s3Credentials": map[string]any{
				"accessKeyId":     map[string]any{"name": "s3", "key": "id"},
				"secretAccessKey": map[string]any{"name": "s3", "key": "secret"},
			},
			"wal":  map[string]any{"compression": "gzip"},
			"data": map[string]any{"compression": "gzip"},
		},
	}
	if diff := cmp.Diff(wantStore, manifest(keyBackupObjectStore)); diff != "" {
		t.Errorf("backup ObjectStore: -want, +got:\n%s", diff)
	}
	if got := manifest(keyRestoreObjectStore); got["retentionPolicy"] != nil {
		t.Errorf("the restore ObjectStore has a retention policy %v: the plugin would prune the source's backups", got["retentionPolicy"])
	}
	sb := find(out, keyScheduledBackup).Object.(*unstructured.Unstructured)
	if diff := cmp.Diff(map[string]any{
		"cluster": map[string]any{"name": "armada-postgres"}, "schedule": "0 0 2 * * *", "immediate": true,
		"method": "plugin", "pluginConfiguration": map[string]any{"name": barmanPluginName},
	}, sb.Object["spec"]); diff != "" {
		t.Errorf("ScheduledBackup: -want, +got:\n%s", diff)
	}
	if out.Status.Backup == nil {
		t.Errorf("status.backup is not reported with spec.postgres.backup set")
	}
}

func TestObserveBackups(t *testing.T) {
	obj := func(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }
	got := Observe(map[string]*unstructured.Unstructured{
		"postgres-cnpg-backup-pre-0-22-8": obj(map[string]any{
			"apiVersion": apiCNPG, "kind": "Backup", "metadata": map[string]any{"name": "armada-postgres-pre-0-22-8"},
			"status": map[string]any{"phase": "completed", "startedAt": "2026-12-02T10:00:00Z", "stoppedAt": "2026-12-02T10:01:00Z"},
		}),
		"pre-running": obj(map[string]any{
			"apiVersion": apiCNPG, "kind": "Backup", "metadata": map[string]any{"name": "running"},
			"status": map[string]any{"phase": "running", "startedAt": "2026-12-02T10:00:00Z"},
		}),
		keyBackupObjectStore: obj(map[string]any{
			"apiVersion": apiK8sObject, "kind": "Object",
			"status": map[string]any{"atProvider": map[string]any{"manifest": map[string]any{
				"apiVersion": apiBarmanCloud, "kind": "ObjectStore",
				"status": map[string]any{"serverRecoveryWindow": map[string]any{"armada-postgres": map[string]any{
					"firstRecoverabilityPoint": "2026-11-01T02:00:00Z", "lastSuccessfulBackupTime": "2026-12-02T02:00:00Z",
				}}},
			}}},
		}),
	})
	if diff := cmp.Diff(map[string]BackupObserved{
		"armada-postgres-pre-0-22-8": {Phase: "completed", Time: "2026-12-02T10:01:00Z"},
		"running":                    {Phase: "running", Time: "2026-12-02T10:00:00Z"},
	}, got.Backups); diff != "" {
		t.Errorf("Observe(...).Backups: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]RecoveryWindow{
		"armada-postgres": {FirstRecoverabilityPoint: "2026-11-01T02:00:00Z", LastSuccessful: "2026-12-02T02:00:00Z"},
	}, got.RecoveryWindows); diff != "" {
		t.Errorf("Observe(...).RecoveryWindows: -want, +got:\n%s", diff)
	}
	// A ScheduledBackup has no Ready condition (its status holds only
	// schedule times): it is ready once it exists, else the claim never is.
	sched := Observe(map[string]*unstructured.Unstructured{keyScheduledBackup: obj(map[string]any{
		"apiVersion": apiCNPG, "kind": "ScheduledBackup", "status": map[string]any{"lastCheckTime": "2026-12-02T10:00:00Z"},
	})})
	if !sched.Ready[keyScheduledBackup] {
		t.Errorf("Observe(...).Ready[%s] = false for an existing ScheduledBackup, want true", keyScheduledBackup)
	}
}
