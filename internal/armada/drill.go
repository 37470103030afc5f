package armada

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"

	_ "embed" // The drill's script.
)

// The restore drill (spec.postgres.backup.restoreDrill) proves on a
// schedule that the newest backup restores. It is a CronJob, so Kubernetes
// keeps the schedule and kube-state-metrics exports its outcome: each run
// is one pod that restores the newest base backup with Barman Cloud (the
// tools CloudNativePG's plugin restores with) into a scratch PostgreSQL on
// a generic ephemeral volume, recovers it to the backup's consistent point
// from the archived WAL, checks it against the running database
// (drill.sh) and ends; the volume, and so the scratch database, is deleted
// with the pod whatever happens to it. The pod needs no Kubernetes API
// access: its ServiceAccount mounts no token and is bound to nothing, and
// its NetworkPolicy lets it reach only the object store, PostgreSQL and
// DNS. The function reads the CronJob's status into the XR's
// status.backup.restoreDrill and the RestoreDrill condition.

//go:embed drill.sh
var drillScript string

// ConditionRestoreDrill reports the restore drill: False when the newest
// drill failed or none has succeeded for longer than maxAge.
const ConditionRestoreDrill = "RestoreDrill"

// RestoreDrill condition reasons and outcomes.
const (
	ReasonDrillSucceeded = "RestoreVerified"
	ReasonDrillFailed    = "RestoreDrillFailed"
	ReasonDrillOverdue   = "RestoreDrillOverdue"
	ReasonDrillRunning   = "RestoreDrillRunning"
	ReasonDrillNotRunYet = "RestoreDrillNotRunYet"

	drillSucceeded = "Succeeded"
	drillFailed    = "Failed"
	drillRunning   = "Running"
	drillNotRunYet = "NotRunYet"
)

// Defaults of spec.postgres.backup.restoreDrill.
const (
	// defaultDrillSchedule is Sundays at 04:00, two hours after the
	// default daily backup.
	defaultDrillSchedule = "0 4 * * 0"
	defaultDrillTimeout  = "2h"
	// defaultDrillMaxAge is a week and a day: one missed weekly drill.
	defaultDrillMaxAge = "192h"

	// drillName names the drill's objects and pods.
	drillName = "restore-drill"
	// keyDrillCronJob and keyDrillServiceAccount are its composition
	// resource names.
	keyDrillCronJob        = drillName + keyCronJobSuffix
	keyDrillServiceAccount = drillName + "-serviceaccount"
	// cnpgUID is the user CloudNativePG's PostgreSQL images run as.
	cnpgUID = 26
	// drillScratch is where the scratch volume is mounted.
	drillScratch = "/scratch"
	// drillCADir holds the object store's CA bundle.
	drillCADir = "/etc/restore-drill/ca"
	// drillStartingDeadline is how late a missed drill may still start.
	drillStartingDeadline = 3600
)

// defaultDrill fills the drill's defaults.
func defaultDrill(d *v1alpha1.RestoreDrill) {
	if d.Enabled == nil {
		d.Enabled = ptr.To(true)
	}
	if d.Schedule == "" {
		d.Schedule = defaultDrillSchedule
	}
	if d.Timeout == "" {
		d.Timeout = defaultDrillTimeout
	}
	if d.MaxAge == "" {
		d.MaxAge = defaultDrillMaxAge
	}
}

// validateDrill checks the defaulted drill; the XRD checks the same.
func validateDrill(p *field.Path, d *v1alpha1.RestoreDrill) field.ErrorList {
	var errs field.ErrorList
	if !cronSchedule5.MatchString(d.Schedule) {
		errs = append(errs, field.Invalid(p.Child("schedule"), d.Schedule, "must be a five-field cron schedule or a macro such as @weekly"))
	}
	timeout, err := time.ParseDuration(d.Timeout)
	if err != nil || timeout < time.Minute {
		errs = append(errs, field.Invalid(p.Child("timeout"), d.Timeout, "must be a duration of at least 1m, e.g. 2h"))
	}
	maxAge, err := time.ParseDuration(d.MaxAge)
	switch {
	case err != nil || maxAge < time.Hour:
		errs = append(errs, field.Invalid(p.Child("maxAge"), d.MaxAge, "must be a duration of at least 1h, e.g. 192h"))
	case maxAge <= timeout:
		errs = append(errs, field.Invalid(p.Child("maxAge"), d.MaxAge, "must be longer than timeout ("+d.Timeout+")"))
	}
	return errs
}

// drillOn reports whether the install composes the restore drill.
func (in *Install) drillOn() bool {
	pg := &in.Spec.Postgres
	return pg.Mode == modeInCluster && pg.Backup != nil && pg.Backup.ObjectStore != nil && ptr.Deref(pg.Backup.RestoreDrill.Enabled, true)
}

// drillEnv is the drill container's environment: where the backups are,
// the running database, and Secret references only.
func (in *Install) drillEnv() []corev1.EnvVar {
	pg := &in.Spec.Postgres
	o := pg.Backup.ObjectStore
	env := []corev1.EnvVar{
		{Name: "DESTINATION", Value: destination(o)},
		{Name: "SERVER_NAME", Value: in.cnpgClusterName()},
	}
	if o.EndpointURL != "" {
		env = append(env, corev1.EnvVar{Name: "ENDPOINT_URL", Value: trimSlash(o.EndpointURL)})
	}
	env = append(env,
		secretEnv("AWS_ACCESS_KEY_ID", o.AccessKeyIDSecretRef.Name, o.AccessKeyIDSecretRef.Key),
		secretEnv("AWS_SECRET_ACCESS_KEY", o.SecretAccessKeySecretRef.Name, o.SecretAccessKeySecretRef.Key))
	if r := o.RegionSecretRef; r != nil {
		env = append(env, secretEnv("AWS_DEFAULT_REGION", r.Name, r.Key))
	}
	if r := o.CASecretRef; r != nil {
		env = append(env, corev1.EnvVar{Name: "AWS_CA_BUNDLE", Value: drillCADir + "/" + r.Key})
	}
	env = append(env,
		corev1.EnvVar{Name: "DATABASES", Value: pg.Databases.Scheduler + ":jobs " + pg.Databases.Lookout + ":job"},
		corev1.EnvVar{Name: "PGHOST", Value: pg.Host},
		corev1.EnvVar{Name: "PGPORT", Value: fmt.Sprint(pg.Port)},
		corev1.EnvVar{Name: "PGUSER", Value: pg.User},
		corev1.EnvVar{Name: "PGSSLMODE", Value: pg.SSLMode},
		secretEnv("PGPASSWORD", pg.PasswordSecretRef.Name, pg.PasswordSecretRef.Key),
		corev1.EnvVar{Name: "SCRATCH", Value: drillScratch},
		corev1.EnvVar{Name: "HOME", Value: drillScratch},
	)
	return env
}

// drillVolumes are the scratch volume (a PersistentVolumeClaim as large as
// an instance's, deleted with the pod), a writable /tmp and the CA bundle.
func (in *Install) drillVolumes() ([]corev1.Volume, []corev1.VolumeMount) {
	ic := in.Spec.Postgres.InCluster
	claim := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *ic.StorageSize}},
	}
	if ic.StorageClass != "" {
		claim.StorageClassName = ptr.To(ic.StorageClass)
	}
	vols := []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: in.labels(drillName)},
				Spec:       claim,
			},
		}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{{Name: "scratch", MountPath: drillScratch}, {Name: "tmp", MountPath: "/tmp"}}
	if r := in.Spec.Postgres.Backup.ObjectStore.CASecretRef; r != nil {
		vols = append(vols, corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: r.Name, Items: []corev1.KeyToPath{{Key: r.Key, Path: r.Key}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "ca", MountPath: drillCADir, ReadOnly: true})
	}
	return vols, mounts
}

// drillCronJob is the drill's CronJob: one attempt per run (a failed drill
// is a result, not retried), ended after timeout, never two at once.
func (in *Install) drillCronJob() *batchv1.CronJob {
	d := in.Spec.Postgres.Backup.RestoreDrill
	timeout, _ := time.ParseDuration(d.Timeout)
	vols, mounts := in.drillVolumes()
	labels := in.labels(drillName)
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			ServiceAccountName:           in.object(drillName),
			AutomountServiceAccountToken: ptr.To(false),
			RestartPolicy:                corev1.RestartPolicyNever,
			SecurityContext:              RestrictedPodSecurity(cnpgUID, cnpgUID, ptr.To[int64](cnpgUID)),
			ImagePullSecrets:             in.Spec.ImagePullSecrets,
			Volumes:                      vols,
			Containers: []corev1.Container{{
				Name:                     drillName,
				Image:                    in.Spec.Postgres.InCluster.ImageName,
				Command:                  []string{"/bin/sh", "-c", drillScript},
				Env:                      in.drillEnv(),
				Resources:                requirements("500m", "512Mi", "2", "2Gi"),
				VolumeMounts:             mounts,
				SecurityContext:          RestrictedContainerSecurity(),
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: in.meta(in.object(drillName), drillName),
		Spec: batchv1.CronJobSpec{
			Schedule:                   d.Schedule,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr.To[int64](drillStartingDeadline),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](3),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: batchv1.JobSpec{
					BackoffLimit:          ptr.To[int32](0),
					ActiveDeadlineSeconds: ptr.To(int64(timeout.Seconds())),
					Template:              tpl,
				},
			},
		},
	}
}

// DrillObserved is the observed drill CronJob's status.
type DrillObserved struct {
	// LastSchedule and LastSuccessful are its status.lastScheduleTime and
	// lastSuccessfulTime, zero when unset.
	LastSchedule, LastSuccessful time.Time
	// Active is how many of its Jobs run.
	Active int
}

// observeDrill records the observed drill CronJob.
func observeDrill(o *Observed, u *unstructured.Unstructured) {
	at := func(field string) time.Time {
		s, _, _ := unstructured.NestedString(u.Object, "status", field)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	active, _, _ := unstructured.NestedSlice(u.Object, "status", "active")
	o.Drill = &DrillObserved{LastSchedule: at("lastScheduleTime"), LastSuccessful: at("lastSuccessfulTime"), Active: len(active)}
}

// restoreDrill composes the drill once the in-cluster PostgreSQL is
// composed, and reports it.
func (r *renderer) restoreDrill() {
	in := r.in
	if !in.drillOn() {
		return
	}
	sa := in.serviceAccount(drillName, &component{Name: drillName})
	r.add(keyDrillServiceAccount, sa, r.exists(keyDrillServiceAccount))
	r.add(keyDrillCronJob, in.drillCronJob(), r.exists(keyDrillCronJob))
	st, cond := in.drillStatus(r.opt.Observed.Drill, r.opt.Created, r.opt.Now)
	if r.out.Status.Backup == nil {
		r.out.Status.Backup = &v1alpha1.PostgresBackupStatus{}
	}
	r.out.Status.Backup.RestoreDrill = st
	r.out.Conditions = append(r.out.Conditions, cond)
}

// drillStatus is the drill's status and condition from its observed
// CronJob: the newest run is running while a Job is active, succeeded if
// the last success is not older than the last start, else failed. Its
// age, and whether it is overdue, need a clock: without one (a render
// offline) neither is reported. Before the first success the age counts
// from the XR's creation.
func (in *Install) drillStatus(o *DrillObserved, created, now time.Time) (*v1alpha1.RestoreDrillStatus, Condition) {
	d := in.Spec.Postgres.Backup.RestoreDrill
	name := in.object(drillName)
	st := &v1alpha1.RestoreDrillStatus{CronJob: name, Outcome: drillNotRunYet}
	if o == nil {
		o = &DrillObserved{}
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case o.Active > 0:
		st.Outcome = drillRunning
	case o.LastSchedule.IsZero():
	case !o.LastSuccessful.IsZero() && !o.LastSuccessful.Before(o.LastSchedule):
		st.Outcome = drillSucceeded
	default:
		st.Outcome = drillFailed
	}
	if !o.LastSchedule.IsZero() {
		st.LastRun = stamp(o.LastSchedule)
	}
	since := created
	if !o.LastSuccessful.IsZero() {
		st.LastVerifiedRestore = stamp(o.LastSuccessful)
		since = o.LastSuccessful
	}
	maxAge, _ := time.ParseDuration(d.MaxAge)
	if !now.IsZero() && !since.IsZero() {
		age := max(now.Sub(since), 0)
		st.Age = fmt.Sprintf("%dh", int64(age/time.Hour))
		st.Overdue = age > maxAge
	}
	logs := fmt.Sprintf("kubectl -n %s logs -l %s=%s,%s=%s --tail=20", in.Namespace, labelInstance, in.Name, labelComponent, drillName)
	switch {
	case st.Outcome == drillFailed:
		return st, Condition{Type: ConditionRestoreDrill, Reason: ReasonDrillFailed, Message: fmt.Sprintf(
			"The restore drill started at %s failed: the newest backup did not restore or did not match the running database. "+
				"Its pod's log says why (%s); kubectl -n %s get jobs -l %s=%s lists the runs", st.LastRun, logs, in.Namespace, labelComponent, drillName)}
	case st.Overdue && st.LastVerifiedRestore == "":
		return st, Condition{Type: ConditionRestoreDrill, Reason: ReasonDrillOverdue, Message: fmt.Sprintf(
			"No restore of a backup has been verified in the %s since the Armada was created (maxAge %s); "+
				"check that backups complete (status.backup.lastSuccessfulTime) and that the CronJob %s runs (kubectl -n %s get cronjob %s)",
			st.Age, d.MaxAge, name, in.Namespace, name)}
	case st.Overdue:
		return st, Condition{Type: ConditionRestoreDrill, Reason: ReasonDrillOverdue, Message: fmt.Sprintf(
			"The last verified restore was at %s, %s ago, longer than maxAge %s; check that the CronJob %s runs (kubectl -n %s get cronjob %s)",
			st.LastVerifiedRestore, st.Age, d.MaxAge, name, in.Namespace, name)}
	case st.Outcome == drillRunning:
		return st, Condition{Type: ConditionRestoreDrill, Status: true, Reason: ReasonDrillRunning, Message: "A restore drill is running (" + logs + ")"}
	case st.Outcome == drillNotRunYet:
		return st, Condition{Type: ConditionRestoreDrill, Status: true, Reason: ReasonDrillNotRunYet, Message: fmt.Sprintf(
			"No restore drill has run yet; the CronJob %s runs on %q", name, d.Schedule)}
	}
	return st, Condition{Type: ConditionRestoreDrill, Status: true, Reason: ReasonDrillSucceeded, Message: fmt.Sprintf(
		"The newest backup was restored and checked at %s", st.LastVerifiedRestore)}
}

// drillFlows are the drill's connections: DNS, the object store and
// PostgreSQL.
func (in *Install) drillFlows() []flow {
	if !in.drillOn() {
		return nil
	}
	o := in.Spec.Postgres.Backup.ObjectStore
	store := anywhere("S3 object store", []int32{portHTTPS})
	if o.EndpointURL != "" {
		store = anywhere("S3 object store", []int32{urlPort(o.EndpointURL)})
	}
	return []flow{
		dnsFlow(drillName),
		flowTo(drillName, store, "spec.postgres.backup.objectStore"),
		flowTo(drillName, in.postgresEndpoint(), "postgres"),
	}
}

// drillPods are the drill's pods, which get a NetworkPolicy.
func (in *Install) drillPods() []string {
	if !in.drillOn() {
		return nil
	}
	return []string{drillName}
}
