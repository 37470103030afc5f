package v1alpha1

// PostgresBackup backs up the in-cluster PostgreSQL with CloudNativePG's
// Barman Cloud Plugin: continuous WAL archiving and scheduled base backups
// to an S3-compatible object store, and a backup before every upgrade.
// The plugin (and cert-manager, which it needs) must be installed.
// +kubebuilder:validation:XValidation:rule="has(self.objectStore)",message="spec.postgres.backup needs objectStore: the S3-compatible bucket base backups and WAL go to"
type PostgresBackup struct {
	// ObjectStore is where base backups and WAL are archived.
	// +optional
	ObjectStore *BackupObjectStore `json:"objectStore,omitempty"`
	// Schedule of the base backups, a six-field cron expression with
	// seconds first, as CloudNativePG's ScheduledBackup reads it. Defaults
	// to "0 0 2 * * *" (every day at 02:00). A first backup is taken as
	// soon as the cluster is up.
	// +kubebuilder:validation:Pattern=`^\S+( \S+){5}$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// Retention is how long backups and WAL are kept in the object store:
	// a number and d (days), w (weeks) or m (months). Defaults to "30d".
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*[dwm]$`
	// +optional
	Retention string `json:"retention,omitempty"`
	// BeforeUpgrade takes an on-demand backup when spec.version changes
	// and holds the schema migrations until it has completed. Defaults to
	// true.
	// +optional
	BeforeUpgrade *bool `json:"beforeUpgrade,omitempty"`
	// RestoreDrill restores the newest backup on a schedule into a scratch
	// PostgreSQL and checks it. On by default.
	// +optional
	RestoreDrill RestoreDrill `json:"restoreDrill,omitempty"`
}

// RestoreDrill is a CronJob that proves the newest backup restores: it
// restores it with Barman Cloud into a scratch PostgreSQL on a volume that
// lives as long as its pod, checks Armada's schema and job tables against
// the running database, and ends. Durations are Go durations with h, m or
// s units, e.g. "2h" or "192h".
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.maxAge) || duration(self.maxAge) > duration(self.timeout)",message="spec.postgres.backup.restoreDrill.maxAge must be longer than timeout"
type RestoreDrill struct {
	// Enabled composes the drill. Defaults to true; false removes it.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Schedule of the drill, in Kubernetes CronJob syntax: five fields
	// (minute hour day-of-month month day-of-week) or a macro such as
	// @weekly. Defaults to "0 4 * * 0" (Sundays at 04:00).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( \S+){4})$`
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// Timeout ends a drill that takes longer, as failed. Defaults to "2h".
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be at least 1m"
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// MaxAge is how old the last verified restore may be before the drill
	// is overdue: the RestoreDrill condition turns False and the
	// ArmadaRestoreDrillOverdue alert fires. Defaults to "192h" (8 days).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="must be at least 1h"
	// +optional
	MaxAge string `json:"maxAge,omitempty"`
}

// BackupObjectStore is an S3-compatible bucket and how to reach it. Every
// Secret it names must be in the Armada's namespace.
type BackupObjectStore struct {
	// EndpointURL of the S3 API, for a server other than AWS S3, e.g.
	// https://minio.storage.svc:9000. Empty for AWS S3.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+/?$`
	// +optional
	EndpointURL string `json:"endpointURL,omitempty"`
	// Bucket holding the backups.
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`
	Bucket string `json:"bucket"`
	// Path in the bucket, without leading or trailing slash. Backups of
	// the cluster go under <path>/<cluster name>/. Empty for the bucket's
	// root.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`
	// +optional
	Path string `json:"path,omitempty"`
	// AccessKeyIDSecretRef selects the S3 access key id.
	AccessKeyIDSecretRef SecretKeyRef `json:"accessKeyIdSecretRef"`
	// SecretAccessKeySecretRef selects the S3 secret access key.
	SecretAccessKeySecretRef SecretKeyRef `json:"secretAccessKeySecretRef"`
	// RegionSecretRef selects the S3 region, for servers that need one.
	// +optional
	RegionSecretRef *SecretKeyRef `json:"regionSecretRef,omitempty"`
	// CASecretRef selects a PEM CA bundle that signs the endpoint's
	// certificate, for an https endpoint with a private CA.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
}

// PostgresRestore bootstraps a new in-cluster PostgreSQL from a backup
// taken by another Armada's spec.postgres.backup (or by any CloudNativePG
// cluster through the Barman Cloud Plugin). It applies only when the
// cluster is created: it cannot be added, changed or removed later.
type PostgresRestore struct {
	// ObjectStore holding the backup: the source's
	// spec.postgres.backup.objectStore.
	ObjectStore BackupObjectStore `json:"objectStore"`
	// ServerName is the folder of the source cluster in the object store:
	// the source CloudNativePG cluster's name, <source Armada>-postgres.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	ServerName string `json:"serverName"`
	// TargetTime recovers up to this point in time (RFC 3339, e.g.
	// 2026-12-01T10:00:00Z), from the newest base backup before it and the
	// archived WAL. Without it the cluster recovers to the end of the
	// archived WAL.
	// +kubebuilder:validation:Format=date-time
	// +optional
	TargetTime string `json:"targetTime,omitempty"`
}

// PostgresBackupStatus reports the in-cluster PostgreSQL's backups.
type PostgresBackupStatus struct {
	// LastBackup is the on-demand Backup taken before the newest upgrade.
	// +optional
	LastBackup *BackupRun `json:"lastBackup,omitempty"`
	// LastSuccessfulTime is when the newest backup in the object store
	// completed, as the Barman Cloud Plugin reports it.
	// +optional
	LastSuccessfulTime string `json:"lastSuccessfulTime,omitempty"`
	// LastFailedTime is when the newest failed backup ended.
	// +optional
	LastFailedTime string `json:"lastFailedTime,omitempty"`
	// FirstRecoverabilityPoint is the earliest point in time a restore
	// can reach.
	// +optional
	FirstRecoverabilityPoint string `json:"firstRecoverabilityPoint,omitempty"`
	// RestoreDrill reports the scheduled restore drill.
	// +optional
	RestoreDrill *RestoreDrillStatus `json:"restoreDrill,omitempty"`
}

// RestoreDrillStatus reports the restore drill, as its CronJob's status
// shows it.
type RestoreDrillStatus struct {
	// CronJob running the drill; its Jobs' logs say what each drill found.
	CronJob string `json:"cronJob"`
	// Outcome of the newest drill: Succeeded, Failed, Running or NotRunYet.
	Outcome string `json:"outcome"`
	// LastRun is when the newest drill started.
	// +optional
	LastRun string `json:"lastRun,omitempty"`
	// LastVerifiedRestore is when the newest successful drill ended.
	// +optional
	LastVerifiedRestore string `json:"lastVerifiedRestore,omitempty"`
	// Age of the last verified restore, in whole hours, when the function
	// last looked (or of the Armada, before the first).
	// +optional
	Age string `json:"age,omitempty"`
	// Overdue is set when no restore has been verified for longer than
	// spec.postgres.backup.restoreDrill.maxAge.
	// +optional
	Overdue bool `json:"overdue,omitempty"`
}

// BackupRun is one CloudNativePG Backup.
type BackupRun struct {
	// Name of the Backup object.
	Name string `json:"name"`
	// Phase CloudNativePG reports (pending, running, completed, failed,
	// ...), or "not observed yet".
	Phase string `json:"phase"`
	// Time the backup stopped, or started while it runs.
	// +optional
	Time string `json:"time,omitempty"`
}
