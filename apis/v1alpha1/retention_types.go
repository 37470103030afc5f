package v1alpha1

// Retention prunes Armada's two databases of finished jobs, as Armada's
// Helm charts do: one CronJob per database runs the component's own
// binary (`scheduler pruneDatabase`, `lookout --pruneDatabase`) against
// it. Both are on by default, with the charts' schedule and settings.
type Retention struct {
	// Scheduler prunes the scheduler database: jobs finished (succeeded,
	// failed or cancelled) more than expireAfter ago, with their runs and
	// errors. Defaults to Armada's chart: @hourly, expireAfter 2h,
	// batchSize 10000, timeout 5m.
	// +kubebuilder:validation:XValidation:rule="!has(self.deduplicationExpireAfter)",message="spec.retention.scheduler.deduplicationExpireAfter: only Lookout's pruner keeps deduplication entries; set it under spec.retention.lookout"
	// +optional
	Scheduler Pruner `json:"scheduler,omitempty"`
	// Lookout prunes the lookout database: jobs in a terminal state
	// (succeeded, failed, cancelled, preempted or rejected) for more than
	// expireAfter, with their specs, runs and errors, and job
	// deduplication entries older than deduplicationExpireAfter. Defaults
	// to Armada's Lookout config: @hourly, expireAfter 1008h (6 weeks),
	// deduplicationExpireAfter 168h, batchSize 1000, timeout 1h.
	// +optional
	Lookout Pruner `json:"lookout,omitempty"`
}

// Pruner is one database's pruning CronJob. Durations are Go durations
// with h, m, s, ms, us or ns units, e.g. "2h" or "1h30m".
type Pruner struct {
	// Enabled composes the CronJob. Defaults to true; false removes it
	// and leaves every job in the database.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Schedule of the CronJob, in Kubernetes CronJob syntax: five fields
	// (minute hour day-of-month month day-of-week) or a macro such as
	// @hourly or @daily. Defaults to @hourly.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( \S+){4})$`
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// ExpireAfter is how long a finished job is kept before it is pruned.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be longer than zero"
	// +optional
	ExpireAfter string `json:"expireAfter,omitempty"`
	// DeduplicationExpireAfter is how long Lookout keeps a job
	// deduplication entry (Lookout only).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be longer than zero"
	// +optional
	DeduplicationExpireAfter string `json:"deduplicationExpireAfter,omitempty"`
	// BatchSize is how many jobs are deleted in one transaction.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	BatchSize *int32 `json:"batchSize,omitempty"`
	// Timeout ends a run that takes longer; jobs deleted until then stay
	// deleted, and the next run goes on.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be longer than zero"
	// +optional
	Timeout string `json:"timeout,omitempty"`
}
