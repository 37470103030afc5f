package armada

import (
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Backups of the in-cluster PostgreSQL go through CloudNativePG's Barman
// Cloud Plugin (CloudNativePG's in-tree barmanObjectStore is deprecated and
// due for removal in 1.31): an ObjectStore of the plugin's API, the
// Cluster's plugin entry that archives WAL to it, a ScheduledBackup and,
// before every upgrade, an on-demand Backup the migrations wait for.
// Releases are pinned in internal/harness/thirdparty (cloudnative-pg,
// plugin-barman-cloud), whose CRDs the composed objects validate against.
const (
	apiBarmanCloud   = "barmancloud.cnpg.io/v1"
	barmanPluginName = "barman-cloud.cloudnative-pg.io"
	// backupCompression compresses base backups and WAL; barman-cloud
	// supports it without extra libraries.
	backupCompression = "gzip"
	// restoreSource names the recovery source among the Cluster's
	// externalClusters.
	restoreSource = "origin"

	// Readiness policies of provider-kubernetes Objects.
	readyFromObject = "DeriveFromObject"
	readyOnCreate   = "SuccessfulCreate"

	defaultBackupSchedule  = "0 0 2 * * *"
	defaultBackupRetention = "30d"

	// CloudNativePG's Backup phases that end a backup (api/v1
	// backup_types.go: BackupPhaseCompleted, BackupPhaseFailed).
	backupCompleted = "completed"
	backupFailed    = "failed"
	// backupUnobserved is a composed Backup's phase in status before it is
	// observed.
	backupUnobserved = "not observed yet"
)

// Composition resource names of the backup objects. They share the
// in-cluster PostgreSQL's prefix, so a mode switch sees them as its
// resources.
const (
	keyBackupObjectStore  = "postgres-cnpg-objectstore"
	keyRestoreObjectStore = "postgres-cnpg-restore-objectstore"
	keyScheduledBackup    = "postgres-cnpg-scheduledbackup"
	keyPreUpgradeBackup   = "postgres-cnpg-backup-pre-"
)

var (
	cronSchedule = regexp.MustCompile(`^\S+( \S+){5}$`)
	retention    = regexp.MustCompile(`^[1-9]\d*[dwm]$`)
	bucketName   = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	bucketPath   = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
)

// A backupObject is one row of the table of backup objects composed from
// the spec alone: its composition resource name, when it is composed and
// its builder.
type backupObject struct {
	Key   string
	When  func(*v1alpha1.Postgres) bool
	Build func(*Install) *unstructured.Unstructured
}

var backupObjects = []backupObject{
	{
		Key:   keyBackupObjectStore,
		When:  func(pg *v1alpha1.Postgres) bool { return pg.Backup != nil },
		Build: func(in *Install) *unstructured.Unstructured { return in.backupObjectStore() },
	},
	{
		Key:   keyRestoreObjectStore,
		When:  func(pg *v1alpha1.Postgres) bool { return pg.Restore != nil },
		Build: func(in *Install) *unstructured.Unstructured { return in.restoreObjectStore() },
	},
	{
		Key:   keyScheduledBackup,
		When:  func(pg *v1alpha1.Postgres) bool { return pg.Backup != nil },
		Build: func(in *Install) *unstructured.Unstructured { return in.scheduledBackup() },
	},
}

// defaultBackup fills spec.postgres.backup's defaults.
func defaultBackup(b *v1alpha1.PostgresBackup) {
	if b == nil {
		return
	}
	if b.Schedule == "" {
		b.Schedule = defaultBackupSchedule
	}
	if b.Retention == "" {
		b.Retention = defaultBackupRetention
	}
	if b.BeforeUpgrade == nil {
		b.BeforeUpgrade = ptr.To(true)
	}
	defaultDrill(&b.RestoreDrill)
}

// validateBackupRestore checks spec.postgres.backup and restore: they need
// an in-cluster PostgreSQL, and an object store that can be reached.
func validateBackupRestore(p *field.Path, pg *v1alpha1.Postgres) field.ErrorList {
	var errs field.ErrorList
	if pg.Mode != modeInCluster {
		if pg.Backup != nil {
			errs = append(errs, field.Forbidden(p.Child("backup"),
				"only valid with mode: InCluster; back up an External database with its provider's tools (docs/guides/backups.md)"))
		}
		if pg.Restore != nil {
			errs = append(errs, field.Forbidden(p.Child("restore"),
				"only valid with mode: InCluster; restore an External database with its provider's tools (docs/guides/backups.md)"))
		}
		return errs
	}
	if b := pg.Backup; b != nil {
		bp := p.Child("backup")
		if b.ObjectStore == nil {
			errs = append(errs, field.Required(bp.Child("objectStore"), "the S3-compatible bucket base backups and WAL go to"))
		} else {
			errs = append(errs, validateObjectStore(bp.Child("objectStore"), b.ObjectStore)...)
		}
		if !cronSchedule.MatchString(b.Schedule) {
			errs = append(errs, field.Invalid(bp.Child("schedule"), b.Schedule, "must be a six-field cron expression, seconds first (e.g. \"0 0 2 * * *\")"))
		}
		if !retention.MatchString(b.Retention) {
			errs = append(errs, field.Invalid(bp.Child("retention"), b.Retention, "must be a number and d, w or m (e.g. 30d)"))
		}
		errs = append(errs, validateDrill(bp.Child("restoreDrill"), &b.RestoreDrill)...)
	}
	if r := pg.Restore; r != nil {
		rp := p.Child("restore")
		errs = append(errs, validateObjectStore(rp.Child("objectStore"), &r.ObjectStore)...)
		for _, msg := range validation.IsDNS1123Label(r.ServerName) {
			errs = append(errs, field.Invalid(rp.Child("serverName"), r.ServerName, msg))
		}
		if r.TargetTime != "" {
			if _, err := time.Parse(time.RFC3339, r.TargetTime); err != nil {
				errs = append(errs, field.Invalid(rp.Child("targetTime"), r.TargetTime, "must be an RFC 3339 time, e.g. 2026-12-01T10:00:00Z"))
			}
		}
	}
	return errs
}

func validateObjectStore(p *field.Path, o *v1alpha1.BackupObjectStore) field.ErrorList {
	var errs field.ErrorList
	if o.EndpointURL != "" && !adminURL.MatchString(o.EndpointURL) {
		errs = append(errs, field.Invalid(p.Child("endpointURL"), o.EndpointURL, "must be http(s)://host[:port]"))
	}
	if !bucketName.MatchString(o.Bucket) {
		errs = append(errs, field.Invalid(p.Child("bucket"), o.Bucket, "must be an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens"))
	}
	if o.Path != "" && !bucketPath.MatchString(o.Path) {
		errs = append(errs, field.Invalid(p.Child("path"), o.Path,
			"must be segments of letters, digits, '.', '_' and '-' separated by '/', without leading or trailing '/'"))
	}
	errs = append(errs, validateSecretRef(p.Child("accessKeyIdSecretRef"), &o.AccessKeyIDSecretRef)...)
	errs = append(errs, validateSecretRef(p.Child("secretAccessKeySecretRef"), &o.SecretAccessKeySecretRef)...)
	if o.RegionSecretRef != nil {
		errs = append(errs, validateSecretRef(p.Child("regionSecretRef"), o.RegionSecretRef)...)
	}
	if o.CASecretRef != nil {
		errs = append(errs, validateSecretRef(p.Child("caSecretRef"), o.CASecretRef)...)
	}
	return errs
}

// objectStoreSecrets are the Secret inputs of an object store, by field
// path.
func objectStoreSecrets(p *field.Path, o *v1alpha1.BackupObjectStore, out map[*field.Path]string) {
	if o == nil {
		return
	}
	out[p.Child("accessKeyIdSecretRef", "name")] = o.AccessKeyIDSecretRef.Name
	out[p.Child("secretAccessKeySecretRef", "name")] = o.SecretAccessKeySecretRef.Name
	if r := o.RegionSecretRef; r != nil {
		out[p.Child("regionSecretRef", "name")] = r.Name
	}
	if r := o.CASecretRef; r != nil {
		out[p.Child("caSecretRef", "name")] = r.Name
	}
}

// checkRestoreTarget refuses a restore whose source is where the restored
// cluster would archive its own WAL: the same store and the cluster's own
// name. Barman refuses to archive into a non-empty archive, and sharing it
// would mix two timelines.
func (in *Install) checkRestoreTarget() field.ErrorList {
	pg := &in.Spec.Postgres
	if pg.Mode != modeInCluster || pg.Backup == nil || pg.Backup.ObjectStore == nil || pg.Restore == nil {
		return nil
	}
	if pg.Restore.ServerName != in.cnpgClusterName() || destination(pg.Backup.ObjectStore) != destination(&pg.Restore.ObjectStore) ||
		pg.Backup.ObjectStore.EndpointURL != pg.Restore.ObjectStore.EndpointURL {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "postgres", "restore", "serverName"), pg.Restore.ServerName, fmt.Sprintf(
		"the restored cluster %s would archive its WAL into the backup it restores from; set spec.postgres.backup.objectStore.path to a new path",
		in.cnpgClusterName()))}
}

// destination is an object store's barman destination path.
func destination(o *v1alpha1.BackupObjectStore) string {
	if o.Path == "" {
		return "s3://" + o.Bucket + "/"
	}
	return "s3://" + o.Bucket + "/" + o.Path + "/"
}

// objectStoreConfiguration is the plugin ObjectStore's spec.configuration
// (barman's BarmanObjectStoreConfiguration): only Secret references, never
// what they hold.
func objectStoreConfiguration(o *v1alpha1.BackupObjectStore) map[string]any {
	ref := func(r *v1alpha1.SecretKeyRef) map[string]any { return map[string]any{"name": r.Name, "key": r.Key} }
	creds := map[string]any{
		"accessKeyId":     ref(&o.AccessKeyIDSecretRef),
		"secretAccessKey": ref(&o.SecretAccessKeySecretRef),
	}
	if o.RegionSecretRef != nil {
		creds["region"] = ref(o.RegionSecretRef)
	}
	c := map[string]any{
		"destinationPath": destination(o),
		"s3Credentials":   creds,
		"wal":             map[string]any{"compression": backupCompression},
		"data":            map[string]any{"compression": backupCompression},
	}
	if o.EndpointURL != "" {
		c["endpointURL"] = trimSlash(o.EndpointURL)
	}
	if o.CASecretRef != nil {
		c["endpointCA"] = ref(o.CASecretRef)
	}
	return c
}

// backupStoreName and restoreStoreName name the plugin ObjectStores.
func (in *Install) backupStoreName() string  { return in.object("postgres-backup") }
func (in *Install) restoreStoreName() string { return in.object("postgres-restore") }

// backupObjectStore is the ObjectStore the cluster archives to, wrapped in
// a provider-kubernetes Object protected like the Cluster: a Cluster left
// in place by spec.deletionPolicy Orphan keeps archiving to it.
func (in *Install) backupObjectStore() *unstructured.Unstructured {
	b := in.Spec.Postgres.Backup
	store := in.unstructuredObject(apiBarmanCloud, "ObjectStore", in.backupStoreName(), "postgres", map[string]any{
		"configuration":   objectStoreConfiguration(b.ObjectStore),
		"retentionPolicy": b.Retention,
	})
	return in.protectedObject(in.object("postgres-backup-store"), readyOnCreate, store)
}

// restoreObjectStore is the ObjectStore the cluster is recovered from. It
// has no retention policy: the plugin never prunes through it.
func (in *Install) restoreObjectStore() *unstructured.Unstructured {
	r := in.Spec.Postgres.Restore
	store := in.unstructuredObject(apiBarmanCloud, "ObjectStore", in.restoreStoreName(), "postgres", map[string]any{
		"configuration": objectStoreConfiguration(&r.ObjectStore),
	})
	return in.protectedObject(in.object("postgres-restore-store"), readyOnCreate, store)
}

// scheduledBackup takes base backups on the schedule, the first as soon
// as the cluster is up.
func (in *Install) scheduledBackup() *unstructured.Unstructured {
	return in.unstructuredObject(apiCNPG, "ScheduledBackup", in.object("postgres-scheduled"), "postgres", map[string]any{
		"cluster":             map[string]any{"name": in.cnpgClusterName()},
		"schedule":            in.Spec.Postgres.Backup.Schedule,
		"immediate":           true,
		"method":              "plugin",
		"pluginConfiguration": map[string]any{"name": barmanPluginName},
	})
}

// preUpgradeBackupName names the Backup taken before upgrading to version.
func (in *Install) preUpgradeBackupName(version string) string {
	return in.object("postgres-pre-" + versionSuffix(version))
}

// preUpgradeBackup is the on-demand Backup taken before upgrading to
// version.
func (in *Install) preUpgradeBackup(version string) *unstructured.Unstructured {
	return in.unstructuredObject(apiCNPG, "Backup", in.preUpgradeBackupName(version), "postgres", map[string]any{
		"cluster":             map[string]any{"name": in.cnpgClusterName()},
		"method":              "plugin",
		"pluginConfiguration": map[string]any{"name": barmanPluginName},
	})
}

// clusterBackupSpec adds to the CloudNativePG Cluster's spec the plugin
// entry that archives WAL and, when restoring, the recovery bootstrap in
// place of initdb.
func (in *Install) clusterBackupSpec(spec map[string]any) {
	pg := &in.Spec.Postgres
	if pg.Backup != nil {
		spec["plugins"] = []any{map[string]any{
			"name":          barmanPluginName,
			"isWALArchiver": true,
			"parameters":    map[string]any{"barmanObjectName": in.backupStoreName()},
		}}
	}
	r := pg.Restore
	if r == nil {
		return
	}
	recovery := map[string]any{"source": restoreSource, "database": cnpgOwner, "owner": cnpgOwner}
	if r.TargetTime != "" {
		recovery["recoveryTarget"] = map[string]any{"targetTime": r.TargetTime}
	}
	spec["bootstrap"] = map[string]any{"recovery": recovery}
	spec["externalClusters"] = []any{map[string]any{
		"name": restoreSource,
		"plugin": map[string]any{
			"name":       barmanPluginName,
			"parameters": map[string]any{"barmanObjectName": in.restoreStoreName(), "serverName": r.ServerName},
		},
	}}
}

// protectedObject wraps an object of this cluster in a provider-kubernetes
// Object whose managementPolicies follow spec.deletionPolicy, ready by the
// readiness policy: DeriveFromObject for an object with a Ready
// condition, SuccessfulCreate for one without (an ObjectStore).
func (in *Install) protectedObject(name, readiness string, manifest *unstructured.Unstructured) *unstructured.Unstructured {
	return in.unstructuredObject(apiK8sObject, "Object", name, "postgres", in.protect(map[string]any{
		"forProvider":       map[string]any{"manifest": manifest.Object},
		"readiness":         map[string]any{"policy": readiness},
		"providerConfigRef": map[string]any{"kind": kindClusterPCRef, "name": in.Spec.ProviderConfigs.Kubernetes},
	}))
}

// A backupHold is why migrations not yet started must wait for the
// pre-upgrade Backup; the zero value lets them run.
type backupHold struct {
	// Reason is the MigrationsComplete condition's reason.
	Reason string
	// Message says what is awaited, or what failed and what to do.
	Message string
}

// backups composes the backup objects and, during an upgrade, the Backup
// taken first. It returns what holds the migrations not yet started. Nothing here depends on an observation to stay
// composed: a Backup once observed stays composed while spec.version is
// the version it was taken for.
func (r *renderer) backups() backupHold {
	in, o := r.in, r.opt.Observed
	pg := &in.Spec.Postgres
	if pg.Mode != modeInCluster {
		return backupHold{}
	}
	for _, b := range backupObjects {
		if b.When(pg) {
			r.add(b.Key, b.Build(in), o.Ready[b.Key])
		}
	}
	if pg.Backup == nil {
		return backupHold{}
	}
	status := &v1alpha1.PostgresBackupStatus{}
	r.out.Status.Backup = status
	if w, ok := o.RecoveryWindows[in.cnpgClusterName()]; ok {
		status.LastSuccessfulTime, status.LastFailedTime, status.FirstRecoverabilityPoint = w.LastSuccessful, w.LastFailed, w.FirstRecoverabilityPoint
	}
	v := in.Spec.Version
	name := in.preUpgradeBackupName(v)
	run, seen := o.Backups[name]
	from := in.upgradingFrom(o)
	if !seen && o.StatusBackup != name && (from == "" || !*pg.Backup.BeforeUpgrade) {
		return backupHold{}
	}
	r.add(keyPreUpgradeBackup+versionSuffix(v), in.preUpgradeBackup(v), seen && run.Phase == backupCompleted)
	status.LastBackup = &v1alpha1.BackupRun{Name: name, Phase: run.Phase, Time: run.Time}
	if !seen {
		status.LastBackup.Phase = backupUnobserved
	}
	switch {
	case !*pg.Backup.BeforeUpgrade || seen && run.Phase == backupCompleted:
		// The user chose to upgrade without it, or it is done; a Backup
		// already composed stays.
		return backupHold{}
	case seen && run.Phase == backupFailed:
		return backupHold{Reason: ReasonBackupFailed, Message: fmt.Sprintf(
			"the Backup %s taken before upgrading to Armada %s failed (see kubectl describe backup %s); "+
				"running components are kept: delete the Backup to take it again, or set spec.postgres.backup.beforeUpgrade: false to upgrade without it",
			name, v, name)}
	}
	what, phase := "upgrading", status.LastBackup.Phase
	if from != "" {
		what = "upgrading from Armada " + from
	}
	if phase == "" {
		phase = "not started"
	}
	return backupHold{Reason: ReasonWaitingForBackup, Message: fmt.Sprintf(
		"Waiting for the Backup %s of PostgreSQL, taken before %s to %s, to complete (phase: %s)", name, what, v, phase)}
}

// upgradingFrom is the oldest version the install ran while spec.version
// differs from it: a component workload's observed version or, when none
// differs, a version the XR's status last reported (the desired version
// of the last reconcile, or the running one). Empty for a new install and
// once every component runs spec.version.
func (in *Install) upgradingFrom(o Observed) string {
	from := ""
	for _, w := range o.Workloads {
		if w.Version != "" && w.Version != in.Spec.Version && (from == "" || compareVersions(w.Version, from) < 0) {
			from = w.Version
		}
	}
	if from != "" {
		return from
	}
	for _, v := range o.StatusVersions {
		if v != in.Spec.Version && (from == "" || compareVersions(v, from) < 0) {
			from = v
		}
	}
	return from
}
