package armada

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// pruneView is what a test compares of a composed pruner CronJob.
type pruneView struct {
	Schedule, Image, ServiceAccount string
	Args                            []string
	Suspend                         bool
	Config                          string
}

// prunersOf views the pruner CronJobs of a render, by database.
func prunersOf(t *testing.T, out *Output) map[string]pruneView {
	t.Helper()
	got := map[string]pruneView{}
	for _, o := range out.Objects {
		cj, ok := o.Object.(*batchv1.CronJob)
		if !ok {
			continue
		}
		db := strings.TrimSuffix(strings.TrimPrefix(o.Key, "prune-"), keyCronJobSuffix)
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		cfg := composedSecret(t, out, "prune-"+db+"-config")
		got[db] = pruneView{
			Schedule: cj.Spec.Schedule, Image: pod.Containers[0].Image, ServiceAccount: pod.ServiceAccountName,
			Args: pod.Containers[0].Args, Suspend: ptr.Deref(cj.Spec.Suspend, false), Config: string(cfg.Data[configKey]),
		}
	}
	return got
}

// pruneConfig is a pruner's expected config YAML.
func pruneConfig(t *testing.T, db string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{"postgres": map[string]any{"connection": map[string]any{
		"host": "pg", "port": "5432", "user": "armada", "dbname": db, "sslmode": "disable",
	}}}
	maps.Copy(cfg, extra)
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPruning: each database gets Armada's chart's pruner at the running
// version once its migration completes, with the claim's settings; an
// explicit enabled: false removes it.
func TestPruning(t *testing.T) {
	v := DefaultVersion
	lookoutDefaults := map[string]any{"prunerConfig": map[string]any{
		"expireAfter": "1008h", "deduplicationExpireAfter": "168h", "timeout": "1h", "batchSize": 1000,
	}}
	cases := map[string]struct {
		reason string
		mod    func(*v1alpha1.ArmadaSpec)
		want   func(t *testing.T) map[string]pruneView
	}{
		"Defaults": {
			reason: "Both pruners are on by default, with the scheduler chart's args and Lookout's baked prunerConfig.",
			want: func(t *testing.T) map[string]pruneView {
				t.Helper()
				return map[string]pruneView{
					dbScheduler: {
						Schedule: "@hourly", Image: "gresearch/armada-scheduler:" + v, ServiceAccount: "armada-prune-scheduler",
						Args:   []string{"pruneDatabase", "--config", configPath, "--timeout", "5m", "--batchsize", "10000", "--expireAfter", "2h"},
						Config: pruneConfig(t, "scheduler", nil),
					},
					dbLookout: {
						Schedule: "@hourly", Image: "gresearch/armada-lookout:" + v, ServiceAccount: "armada-prune-lookout",
						Args:   []string{"--pruneDatabase", "--config", configPath},
						Config: pruneConfig(t, "lookout", lookoutDefaults),
					},
				}
			},
		},
		"Configured": {
			reason: "The claim's schedule, retention, batch size and timeout reach each binary the way it reads them.",
			mod: func(s *v1alpha1.ArmadaSpec) {
				s.Retention.Scheduler = v1alpha1.Pruner{Schedule: "*/15 * * * *", ExpireAfter: "24h", BatchSize: ptr.To[int32](500), Timeout: "10m"}
				s.Retention.Lookout = v1alpha1.Pruner{Schedule: "@daily", ExpireAfter: "720h", DeduplicationExpireAfter: "24h", BatchSize: ptr.To[int32](200), Timeout: "30m"}
			},
			want: func(t *testing.T) map[string]pruneView {
				t.Helper()
				return map[string]pruneView{
					dbScheduler: {
						Schedule: "*/15 * * * *", Image: "gresearch/armada-scheduler:" + v, ServiceAccount: "armada-prune-scheduler",
						Args:   []string{"pruneDatabase", "--config", configPath, "--timeout", "10m", "--batchsize", "500", "--expireAfter", "24h"},
						Config: pruneConfig(t, "scheduler", nil),
					},
					dbLookout: {
						Schedule: "@daily", Image: "gresearch/armada-lookout:" + v, ServiceAccount: "armada-prune-lookout",
						Args: []string{"--pruneDatabase", "--config", configPath},
						Config: pruneConfig(t, "lookout", map[string]any{"prunerConfig": map[string]any{
							"expireAfter": "720h", "deduplicationExpireAfter": "24h", "timeout": "30m", "batchSize": 200,
						}}),
					},
				}
			},
		},
		"LookoutOff": {
			reason: "enabled: false is the only way to turn a pruner off.",
			mod:    func(s *v1alpha1.ArmadaSpec) { s.Retention.Lookout.Enabled = ptr.To(false) },
			want: func(t *testing.T) map[string]pruneView {
				t.Helper()
				return map[string]pruneView{dbScheduler: {
					Schedule: "@hourly", Image: "gresearch/armada-scheduler:" + v, ServiceAccount: "armada-prune-scheduler",
					Args:   []string{"pruneDatabase", "--config", configPath, "--timeout", "5m", "--batchsize", "10000", "--expireAfter", "2h"},
					Config: pruneConfig(t, "scheduler", nil),
				}}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec()
			if tc.mod != nil {
				s = spec(tc.mod)
			}
			out := render(t, s, Observed{Jobs: migrated(t, s)})
			if diff := cmp.Diff(tc.want(t), prunersOf(t, out)); diff != "" {
				t.Errorf("%s\npruners (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPrunerPod: a pruner's pod meets "restricted", holds no API token,
// reads the database password from its Secret only, and is bounded by a
// deadline past its timeout; its NetworkPolicy allows DNS and PostgreSQL
// only.
func TestPrunerPod(t *testing.T) {
	s := spec()
	out := render(t, s, Observed{Jobs: migrated(t, s)})
	o := find(out, "prune-scheduler-cronjob")
	if o == nil {
		t.Fatal("no scheduler pruner composed")
	}
	cj := o.Object.(*batchv1.CronJob)
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy = %s, want Forbid as Armada's chart", cj.Spec.ConcurrencyPolicy)
	}
	job := cj.Spec.JobTemplate.Spec
	if got, want := ptr.Deref(job.ActiveDeadlineSeconds, 0), int64(15*60); got != want {
		t.Errorf("activeDeadlineSeconds = %d, want the 5m timeout plus 10m", got)
	}
	pod := job.Template.Spec
	if ptr.Deref(pod.AutomountServiceAccountToken, true) {
		t.Errorf("the pruner's pod mounts a service-account token; it needs no Kubernetes API")
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s, want Never", pod.RestartPolicy)
	}
	checkRestrictedPod(t, o.Key, &pod)
	c := pod.Containers[0]
	want := []corev1.EnvVar{secretEnv("ARMADA_POSTGRES_CONNECTION_PASSWORD", "pg", "password")}
	if diff := cmp.Diff(want, c.Env, cmpopts.IgnoreSliceElements(func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })); diff != "" {
		t.Errorf("pruner env (-want +got):\n%s", diff)
	}
	sa := find(out, "prune-scheduler-serviceaccount")
	if sa == nil || ptr.Deref(sa.Object.(*corev1.ServiceAccount).AutomountServiceAccountToken, true) {
		t.Errorf("the pruner's ServiceAccount is missing or mounts a token: %+v", sa)
	}
	np := find(out, "netpol-prune-scheduler")
	if np == nil {
		t.Fatal("no NetworkPolicy for the scheduler pruner")
	}
	pol := np.Object.(*networkingv1.NetworkPolicy)
	var ports []string
	for _, e := range pol.Spec.Egress {
		for _, p := range e.Ports {
			ports = append(ports, p.Port.String())
		}
	}
	if diff := cmp.Diff([]string{"53", "53", "5432"}, ports); diff != "" || len(pol.Spec.Ingress) != 0 {
		t.Errorf("the pruner's NetworkPolicy allows egress to ports (-want +got):\n%s\nand %d ingress rules, want DNS and PostgreSQL only", diff, len(pol.Spec.Ingress))
	}
}

// TestPrunersAndMigrations: a pruner runs only what a complete migration
// left, and a migration never starts while a pruner may run.
func TestPrunersAndMigrations(t *testing.T) {
	older := SupportedVersions[len(SupportedVersions)-2]
	oldSpec := spec(func(s *v1alpha1.ArmadaSpec) { s.Version = older })
	s := spec()
	running := map[string]Workload{"scheduler": {Version: older, Ready: true}, "lookout": {Version: older, Ready: true}}
	pruner := func(suspended bool, active int) map[string]PrunerObserved {
		return map[string]PrunerObserved{
			"prune-scheduler-cronjob": {Version: older, Suspended: suspended, Active: active},
			"prune-lookout-cronjob":   {Version: older, Suspended: true},
		}
	}
	type want struct {
		pruners    map[string]bool // by database: suspended
		image      string
		migrations bool
		reason     string
	}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		o      Observed
		want   want
	}{
		"FreshInstallBeforeMigrations": {
			reason: "No pruner exists before its database's first migration completes.",
			spec:   s,
			o:      Observed{},
			want:   want{pruners: map[string]bool{}, migrations: true, reason: ReasonRunning},
		},
		"UpgradeSuspendsFirst": {
			reason: "An upgrade suspends the running pruner at its version and holds the new migrations until it is seen suspended.",
			spec:   s,
			o:      Observed{Jobs: migrated(t, oldSpec), Workloads: running, Pruners: pruner(false, 0)},
			want:   want{pruners: map[string]bool{dbScheduler: true, dbLookout: true}, image: older, reason: ReasonWaitingForPruning},
		},
		"UpgradeWaitsForRunningPrune": {
			reason: "A suspended pruner's running Job still holds the migrations.",
			spec:   s,
			o:      Observed{Jobs: migrated(t, oldSpec), Workloads: running, Pruners: pruner(true, 1)},
			want:   want{pruners: map[string]bool{dbScheduler: true, dbLookout: true}, image: older, reason: ReasonWaitingForPruning},
		},
		"UpgradeMigratesOnceIdle": {
			reason: "With every pruner suspended and idle the migrations start, the pruners still suspended at the old version.",
			spec:   s,
			o:      Observed{Jobs: migrated(t, oldSpec), Workloads: running, Pruners: pruner(true, 0)},
			want:   want{pruners: map[string]bool{dbScheduler: true, dbLookout: true}, image: older, migrations: true, reason: ReasonRunning},
		},
		"UpgradeDone": {
			reason: "Once the new migrations complete the pruners run the new version again.",
			spec:   s,
			o:      Observed{Jobs: migrated(t, s), Workloads: running, Pruners: pruner(true, 0)},
			want:   want{pruners: map[string]bool{dbScheduler: false, dbLookout: false}, image: DefaultVersion, migrations: true, reason: ReasonComplete},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, tc.spec, tc.o)
			job := find(out, "migrate-scheduler-"+versionSuffix(DefaultVersion)+"-")
			got := want{pruners: map[string]bool{}, migrations: job != nil, reason: conditionOf(t, out, ConditionMigrations).Reason}
			for db, p := range prunersOf(t, out) {
				got.pruners[db] = p.Suspend
				got.image = p.Image[strings.LastIndex(p.Image, ":")+1:]
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestValidateRetention(t *testing.T) {
	p := field.NewPath("spec", "retention")
	cases := map[string]struct {
		reason string
		mod    func(*v1alpha1.Retention)
		want   field.ErrorList
	}{
		"Defaults": {reason: "Armada's defaults are valid.", mod: func(*v1alpha1.Retention) {}},
		"BadSchedule": {
			reason: "A six-field (seconds-first) schedule is CloudNativePG's, not a CronJob's.",
			mod:    func(r *v1alpha1.Retention) { r.Scheduler.Schedule = "0 0 2 * * *" },
			want:   field.ErrorList{field.Invalid(p.Child("scheduler", "schedule"), "0 0 2 * * *", "")},
		},
		"ZeroAndBadDurations": {
			reason: "Armada's lookout pruner panics on a zero expireAfter; durations are Go's.",
			mod: func(r *v1alpha1.Retention) {
				r.Lookout.ExpireAfter = "0s"
				r.Lookout.Timeout = "1d"
			},
			want: field.ErrorList{
				field.Invalid(p.Child("lookout", "expireAfter"), "0s", ""),
				field.Invalid(p.Child("lookout", "timeout"), "1d", ""),
			},
		},
		"DedupOnScheduler": {
			reason: "Only Lookout keeps deduplication entries.",
			mod:    func(r *v1alpha1.Retention) { r.Scheduler.DeduplicationExpireAfter = "1h" },
			want:   field.ErrorList{field.Forbidden(p.Child("scheduler", "deduplicationExpireAfter"), "")},
		},
		"BatchSize": {
			reason: "A batch deletes at least one job.",
			mod:    func(r *v1alpha1.Retention) { r.Scheduler.BatchSize = ptr.To[int32](0) },
			want:   field.ErrorList{field.Invalid(p.Child("scheduler", "batchSize"), int32(0), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := v1alpha1.Retention{}
			tc.mod(&r)
			defaultRetention(&r)
			got := validateRetention(p, &r)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(field.Error{}, "Detail")); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
