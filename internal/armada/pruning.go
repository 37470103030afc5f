package armada

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Pruning: Armada's charts compose a CronJob per database that deletes
// finished jobs (deployment/scheduler/templates/cronjob.yaml and
// deployment/lookout/templates/cronjob.yaml at the composed release). The
// function composes the same, one row of the pruners table per database,
// each CronJob with its own config Secret, a ServiceAccount that mounts no
// token and is bound to nothing, and a NetworkPolicy that lets it reach
// only PostgreSQL and DNS.
//
// A pruner runs the image of the version whose migration of its database
// is complete: it is composed only once the migration of spec.version has
// completed, and while a later migration is pending (an upgrade, or any
// change that names a new migration Job) it stays at the version it ran,
// suspended. A migration not started yet waits until every observed
// pruner is suspended and has no Job running (pruneHold), so a prune
// never runs during a migration.

// ReasonWaitingForPruning is the MigrationsComplete reason while a
// migration waits for the pruners to stop.
const ReasonWaitingForPruning = "WaitingForPruning"

// Armada's pruning defaults at the composed release: the scheduler
// chart's pruner.schedule and pruner.args, Lookout's chart
// dbPruneSchedule and its baked config's prunerConfig.
const (
	defaultPruneSchedule = "@hourly"

	defaultSchedulerExpireAfter = "2h"
	defaultSchedulerBatchSize   = 10000
	defaultSchedulerTimeout     = "5m"

	defaultLookoutExpireAfter      = "1008h"
	defaultLookoutDedupExpireAfter = "168h"
	defaultLookoutBatchSize        = 1000
	defaultLookoutTimeout          = "1h"

	// pruneBackoffLimit is the charts' jobTemplate backoffLimit.
	pruneBackoffLimit = 6
	// pruneDeadlineSlack is added to a pruner's timeout to bound its Job
	// (activeDeadlineSeconds): a migration waiting for it waits no
	// longer than that.
	pruneDeadlineSlack = 10 * time.Minute
	// pruneStartingDeadline is how late a missed run may still start
	// (startingDeadlineSeconds), e.g. after a suspension ends.
	pruneStartingDeadline = 600
)

// A pruner is one row of the pruning table: a database and how its
// component's binary prunes it.
type pruner struct {
	// Database it prunes, which names its migration too.
	Database string
	// Image (without org and tag) whose binary prunes it.
	Image string
	// Settings selects its entry of spec.retention.
	Settings func(*v1alpha1.Retention) *v1alpha1.Pruner
	// Defaults are Armada's for it.
	Defaults v1alpha1.Pruner
	// Args run it given the config file path and its settings.
	Args func(p *v1alpha1.Pruner) []string
	// Config is its config besides the database's connection.
	Config func(p *v1alpha1.Pruner) map[string]any
}

// pruners are Armada's two database pruners.
var pruners = []pruner{
	{
		Database: dbLookout, Image: "armada-lookout",
		Settings: func(r *v1alpha1.Retention) *v1alpha1.Pruner { return &r.Lookout },
		Defaults: v1alpha1.Pruner{
			Schedule: defaultPruneSchedule, ExpireAfter: defaultLookoutExpireAfter, DeduplicationExpireAfter: defaultLookoutDedupExpireAfter,
			BatchSize: ptr.To[int32](defaultLookoutBatchSize), Timeout: defaultLookoutTimeout,
		},
		// Lookout reads its pruner's settings from prunerConfig
		// (cmd/lookout/main.go prune).
		Args: func(*v1alpha1.Pruner) []string { return []string{"--pruneDatabase", "--config", configPath} },
		Config: func(p *v1alpha1.Pruner) map[string]any {
			return map[string]any{"prunerConfig": map[string]any{
				"expireAfter":              p.ExpireAfter,
				"deduplicationExpireAfter": p.DeduplicationExpireAfter,
				"timeout":                  p.Timeout,
				"batchSize":                int64(*p.BatchSize),
			}}
		},
	},
	{
		Database: dbScheduler, Image: "armada-scheduler",
		Settings: func(r *v1alpha1.Retention) *v1alpha1.Pruner { return &r.Scheduler },
		Defaults: v1alpha1.Pruner{
			Schedule: defaultPruneSchedule, ExpireAfter: defaultSchedulerExpireAfter,
			BatchSize: ptr.To[int32](defaultSchedulerBatchSize), Timeout: defaultSchedulerTimeout,
		},
		// The scheduler takes them as flags
		// (cmd/scheduler/cmd/prune_database.go), as its chart passes them.
		Args: func(p *v1alpha1.Pruner) []string {
			return []string{
				"pruneDatabase", "--config", configPath,
				"--timeout", p.Timeout, "--batchsize", strconv.Itoa(int(*p.BatchSize)), "--expireAfter", p.ExpireAfter,
			}
		},
		Config: func(*v1alpha1.Pruner) map[string]any { return map[string]any{} },
	},
}

// pruneName is a pruner's object and pod name suffix.
func pruneName(database string) string { return "prune-" + database }

// defaultRetention fills each pruner's unset settings with Armada's.
func defaultRetention(r *v1alpha1.Retention) {
	for _, p := range pruners {
		s, d := p.Settings(r), p.Defaults
		if s.Enabled == nil {
			s.Enabled = ptr.To(true)
		}
		if s.Schedule == "" {
			s.Schedule = d.Schedule
		}
		if s.ExpireAfter == "" {
			s.ExpireAfter = d.ExpireAfter
		}
		if s.DeduplicationExpireAfter == "" {
			s.DeduplicationExpireAfter = d.DeduplicationExpireAfter
		}
		if s.BatchSize == nil {
			s.BatchSize = d.BatchSize
		}
		if s.Timeout == "" {
			s.Timeout = d.Timeout
		}
	}
}

// cronSchedule5 is a Kubernetes CronJob schedule: five fields or a macro.
var cronSchedule5 = regexp.MustCompile(`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( \S+){4})$`)

// validateRetention checks spec.retention as defaulted: the XRD checks
// the same, but the function also runs without it (crossplane render).
func validateRetention(p *field.Path, r *v1alpha1.Retention) field.ErrorList {
	var errs field.ErrorList
	for _, pr := range pruners {
		s, pp := pr.Settings(r), p.Child(pr.Database)
		if !cronSchedule5.MatchString(s.Schedule) {
			errs = append(errs, field.Invalid(pp.Child("schedule"), s.Schedule, "must be a five-field cron schedule or a macro such as @hourly"))
		}
		durations := map[string]string{"expireAfter": s.ExpireAfter, "timeout": s.Timeout}
		if pr.Database == dbLookout {
			durations["deduplicationExpireAfter"] = s.DeduplicationExpireAfter
		} else if s.DeduplicationExpireAfter != "" {
			errs = append(errs, field.Forbidden(pp.Child("deduplicationExpireAfter"),
				"only Lookout's pruner keeps deduplication entries; set it under spec.retention.lookout"))
		}
		for _, k := range []string{"expireAfter", "deduplicationExpireAfter", "timeout"} {
			v, ok := durations[k]
			if !ok {
				continue
			}
			if d, err := time.ParseDuration(v); err != nil || d <= 0 {
				errs = append(errs, field.Invalid(pp.Child(k), v, "must be a duration longer than zero, e.g. 2h or 90m"))
			}
		}
		if b := s.BatchSize; b == nil || *b < 1 || *b > 1000000 {
			errs = append(errs, field.Invalid(pp.Child("batchSize"), ptr.Deref(b, 0), "must be between 1 and 1000000"))
		}
	}
	return errs
}

// prunerSettings is the install's defaulted settings for a pruner.
func (in *Install) prunerSettings(p pruner) *v1alpha1.Pruner {
	return p.Settings(&in.Spec.Retention)
}

// enabledPruners are the pruners the spec turns on, in table order.
func (in *Install) enabledPruners() []pruner {
	var out []pruner
	for _, p := range pruners {
		if s := in.prunerSettings(p); s.Enabled == nil || *s.Enabled {
			out = append(out, p)
		}
	}
	return out
}

// pruning composes each enabled pruner whose database's migration has
// completed at some version: at spec.version once its migration is
// complete, else (a pruner observed while a migration is pending)
// suspended at the version it ran.
func (r *renderer) pruning(migrated map[string]JobState) error {
	in := r.in
	for _, p := range in.enabledPruners() {
		name := pruneName(p.Database)
		obs, seen := r.opt.Observed.Pruners[name+keyCronJobSuffix]
		version, suspend := in.Spec.Version, false
		if migrated[p.Database] != JobComplete {
			if !seen {
				continue
			}
			suspend = true
			if obs.Version != "" {
				version = obs.Version
			}
		}
		s := in.prunerSettings(p)
		cfg := p.Config(s)
		cfg["postgres"] = in.postgres(p.Database)
		secret, hash, err := in.configSecret(&r.yaml, in.object(name+"-config"), name, cfg)
		if err != nil {
			return err
		}
		r.add(name+"-config", secret, r.exists(name+"-config"))
		sa := in.serviceAccount(name, &component{Name: name})
		r.add(name+"-serviceaccount", sa, r.exists(name+"-serviceaccount"))
		r.add(name+keyCronJobSuffix, in.pruneCronJob(p, s, version, secret.Name, hash, suspend), r.exists(name+keyCronJobSuffix))
	}
	return nil
}

// keyCronJobSuffix ends a pruner CronJob's composition resource name.
const keyCronJobSuffix = "-cronjob"

// pruneCronJob is a pruner's CronJob at a version: Armada's chart's,
// with the pod meeting "restricted", its own identity, and a deadline.
func (in *Install) pruneCronJob(p pruner, s *v1alpha1.Pruner, version, configSecret, hash string, suspend bool) *batchv1.CronJob {
	name := pruneName(p.Database)
	tpl := in.podTemplate(podOptions{
		Component:    &component{Name: name, Database: p.Database},
		Name:         name,
		Image:        in.image(p.Image, version, nil),
		Args:         p.Args(s),
		Resources:    defaultResources(),
		ConfigSecret: configSecret,
		ConfigHash:   hash,
		Version:      version,
	})
	tpl.Spec.ServiceAccountName = in.object(name)
	timeout, _ := time.ParseDuration(s.Timeout)
	deadline := int64((timeout + pruneDeadlineSlack).Seconds())
	meta := in.meta(in.object(name), name)
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: meta,
		Spec: batchv1.CronJobSpec{
			Schedule:                   s.Schedule,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			Suspend:                    ptr.To(suspend),
			StartingDeadlineSeconds:    ptr.To[int64](pruneStartingDeadline),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tpl.Labels},
				Spec: batchv1.JobSpec{
					BackoffLimit:          ptr.To[int32](pruneBackoffLimit),
					ActiveDeadlineSeconds: ptr.To(deadline),
					Template:              tpl,
				},
			},
		},
	}
}

// PrunerObserved is an observed pruner CronJob.
type PrunerObserved struct {
	// Version its pod template runs.
	Version string
	// Suspended is its spec.suspend.
	Suspended bool
	// Active is how many of its Jobs run (status.active).
	Active int
}

// observePruner records an observed pruner CronJob.
func observePruner(o *Observed, key string, u *unstructured.Unstructured) {
	if o.Pruners == nil {
		o.Pruners = map[string]PrunerObserved{}
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "jobTemplate", "spec", "template", "metadata", "labels", labelVersion)
	suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	active, _, _ := unstructured.NestedSlice(u.Object, "status", "active")
	o.Pruners[key] = PrunerObserved{Version: v, Suspended: suspended, Active: len(active)}
}

// pruneHold holds migrations not started yet while an observed pruner is
// not suspended or still runs a Job; a backup hold comes first.
func (r *renderer) pruneHold(h backupHold) backupHold {
	if h.Reason != "" {
		return h
	}
	var busy []string
	for key, p := range r.opt.Observed.Pruners {
		if !p.Suspended || p.Active > 0 {
			busy = append(busy, strings.TrimSuffix(strings.TrimPrefix(key, "prune-"), keyCronJobSuffix))
		}
	}
	if len(busy) == 0 {
		return h
	}
	slices.Sort(busy)
	return backupHold{Reason: ReasonWaitingForPruning, Message: fmt.Sprintf(
		"Waiting for the %s database pruner to be suspended and its running Job to finish before migrating to Armada %s",
		strings.Join(busy, " and "), r.in.Spec.Version)}
}

// prunerPods are the names of the pruners' pods, which get NetworkPolicies.
func (in *Install) prunerPods() []string {
	enabled := in.enabledPruners()
	out := make([]string, 0, len(enabled))
	for _, p := range enabled {
		out = append(out, pruneName(p.Database))
	}
	return out
}

// prunerFlows are the pruners' connections: DNS and PostgreSQL only.
func (in *Install) prunerFlows() []flow {
	pods := in.prunerPods()
	out := make([]flow, 0, 2*len(pods))
	for _, name := range pods {
		out = append(out, dnsFlow(name), flowTo(name, in.postgresEndpoint(), "postgres"))
	}
	return out
}
