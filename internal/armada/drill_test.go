package armada

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

func TestDrillCronJob(t *testing.T) {
	out := render(t, backupSpec(DefaultVersion), Observed{})
	o := find(out, keyDrillCronJob)
	if o == nil {
		t.Fatal("the restore drill CronJob is not composed with spec.postgres.backup set")
	}
	cj := o.Object.(*batchv1.CronJob)
	job := cj.Spec.JobTemplate.Spec
	pod := job.Template.Spec
	if diff := cmp.Diff([]string{"0 4 * * 0", "Forbid", "0", "7200"}, []string{
		cj.Spec.Schedule, string(cj.Spec.ConcurrencyPolicy), itoa(*job.BackoffLimit), itoa(*job.ActiveDeadlineSeconds),
	}); diff != "" {
		t.Errorf("schedule, concurrency, retries and deadline: -want, +got:\n%s", diff)
	}
	if pod.ServiceAccountName != "armada-restore-drill" || ptr.Deref(pod.AutomountServiceAccountToken, true) {
		t.Errorf("the drill runs as %q with a token %v, want its own identity without a token", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if find(out, keyDrillServiceAccount) == nil {
		t.Errorf("the drill's ServiceAccount is not composed")
	}
	for _, o := range out.Objects {
		kind := o.Object.GetObjectKind().GroupVersionKind().Kind
		if strings.Contains(o.Key, drillName) && kind != "CronJob" && kind != "ServiceAccount" && kind != "NetworkPolicy" {
			t.Errorf("the drill composes %s %s: it needs no Kubernetes API rights", kind, o.Key)
		}
	}
	ctr := pod.Containers[0]
	if ctr.Image != cnpgImage {
		t.Errorf("the drill runs image %s, want the cluster's %s", ctr.Image, cnpgImage)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil {
			env[e.Name] = "secret " + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			continue
		}
		env[e.Name] = e.Value
	}
	if diff := cmp.Diff(map[string]string{
		"DESTINATION": "s3://armada-backups/prod/", "SERVER_NAME": "armada-postgres", "ENDPOINT_URL": "https://s3.storage.svc:9000",
		"AWS_ACCESS_KEY_ID": "secret s3/id", "AWS_SECRET_ACCESS_KEY": "secret s3/secret", "AWS_CA_BUNDLE": "/etc/restore-drill/ca/ca.crt",
		"DATABASES": "scheduler:jobs lookout:job",
		"PGHOST":    "armada-postgres-rw.armada.svc", "PGPORT": "5432", "PGUSER": "armada", "PGSSLMODE": "require",
		"PGPASSWORD": "secret armada-postgres-app/password", "SCRATCH": "/scratch", "HOME": "/scratch",
	}, env); diff != "" {
		t.Errorf("the drill's environment: -want, +got:\n%s", diff)
	}
	scratch := pod.Volumes[0]
	if scratch.Ephemeral == nil || scratch.Ephemeral.VolumeClaimTemplate.Spec.Resources.Requests.Storage().String() != "10Gi" {
		t.Errorf("the scratch volume is %+v, want a generic ephemeral volume as large as an instance's (10Gi)", scratch.VolumeSource)
	}
	sc := pod.SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser != cnpgUID || *ctr.SecurityContext.ReadOnlyRootFilesystem != true {
		t.Errorf("the drill's pod runs as %d (non-root %v, read-only root %v), want CloudNativePG's postgres user, restricted",
			*sc.RunAsUser, *sc.RunAsNonRoot, *ctr.SecurityContext.ReadOnlyRootFilesystem)
	}

	off := render(t, backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup.RestoreDrill.Enabled = ptr.To(false) }), Observed{})
	if find(off, keyDrillCronJob) != nil || find(off, keyDrillServiceAccount) != nil || find(off, "netpol-"+drillName) != nil {
		t.Errorf("restoreDrill.enabled false still composes the drill")
	}
	np, ok := find(out, "netpol-"+drillName).Object.(*networkingv1.NetworkPolicy)
	if !ok {
		t.Fatalf("the drill has no NetworkPolicy")
	}
	var egress []string
	for _, e := range np.Spec.Egress {
		for _, p := range e.Ports {
			egress = append(egress, string(*p.Protocol)+"/"+p.Port.String())
		}
	}
	if diff := cmp.Diff([]string{"UDP/53", "TCP/53", "TCP/9000", "TCP/5432"}, egress); diff != "" {
		t.Errorf("the drill's egress: DNS, the object store's endpoint port and PostgreSQL only: -want, +got:\n%s", diff)
	}
	if len(np.Spec.Ingress) != 0 {
		t.Errorf("the drill's pod admits ingress %v: nothing connects to it", np.Spec.Ingress)
	}
}

func itoa[T int32 | int64](v T) string { return strconv.FormatInt(int64(v), 10) }

func TestDrillRefusals(t *testing.T) {
	p := field.NewPath("spec", "postgres", "backup", "restoreDrill")
	cases := map[string]struct {
		drill v1alpha1.RestoreDrill
		want  []string
	}{
		"Defaults": {},
		"SixFieldSchedule": {
			drill: v1alpha1.RestoreDrill{Schedule: "0 0 4 * * 0"},
			want:  []string{p.Child("schedule").String()},
		},
		"ShortTimeout": {
			drill: v1alpha1.RestoreDrill{Timeout: "30s"},
			want:  []string{p.Child("timeout").String()},
		},
		"MaxAgeNotAfterTimeout": {
			drill: v1alpha1.RestoreDrill{Timeout: "3h", MaxAge: "2h"},
			want:  []string{p.Child("maxAge").String()},
		},
		"MaxAgeNotADuration": {
			drill: v1alpha1.RestoreDrill{MaxAge: "8d"},
			want:  []string{p.Child("maxAge").String()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) { s.Postgres.Backup.RestoreDrill = tc.drill })
			_, errs := New(claimed(s))
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused fields: -want, +got:\n%s\n%v", diff, errs)
			}
		})
	}
}

func TestDrillStatus(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	type want struct {
		status v1alpha1.RestoreDrillStatus
		cond   bool
		reason string
	}
	cases := map[string]struct {
		reason string
		obs    *DrillObserved
		now    time.Time
		want   want
	}{
		"Succeeded": {
			reason: "The newest run succeeded: its success is after its start.",
			obs:    &DrillObserved{LastSchedule: at("2026-12-06T04:00:00Z"), LastSuccessful: at("2026-12-06T04:12:00Z")},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Succeeded", LastRun: "2026-12-06T04:00:00Z", LastVerifiedRestore: "2026-12-06T04:12:00Z", Age: "7h",
			}, cond: true, reason: ReasonDrillSucceeded},
		},
		"Failed": {
			reason: "The newest run ended without success: the last success is an earlier run's.",
			obs:    &DrillObserved{LastSchedule: at("2026-12-06T04:00:00Z"), LastSuccessful: at("2026-11-29T04:10:00Z")},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Failed", LastRun: "2026-12-06T04:00:00Z", LastVerifiedRestore: "2026-11-29T04:10:00Z", Age: "175h",
			}, reason: ReasonDrillFailed},
		},
		"FirstRunFailed": {
			reason: "The first run failed: there is no success at all.",
			obs:    &DrillObserved{LastSchedule: at("2026-12-06T04:00:00Z")},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Failed", LastRun: "2026-12-06T04:00:00Z", Age: "852h", Overdue: true,
			}, reason: ReasonDrillFailed},
		},
		"Running": {
			reason: "A Job is active: the drill runs, the previous success still counts.",
			obs:    &DrillObserved{LastSchedule: at("2026-12-06T04:00:00Z"), LastSuccessful: at("2026-11-29T04:10:00Z"), Active: 1},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Running", LastRun: "2026-12-06T04:00:00Z", LastVerifiedRestore: "2026-11-29T04:10:00Z", Age: "175h",
			}, cond: true, reason: ReasonDrillRunning},
		},
		"Overdue": {
			reason: "The last success is older than maxAge (192h) and nothing runs: the CronJob stopped running.",
			obs:    &DrillObserved{LastSchedule: at("2026-11-20T04:00:00Z"), LastSuccessful: at("2026-11-20T04:10:00Z")},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Succeeded", LastRun: "2026-11-20T04:00:00Z", LastVerifiedRestore: "2026-11-20T04:10:00Z", Age: "391h", Overdue: true,
			}, reason: ReasonDrillOverdue},
		},
		"NeverRunYoung": {
			reason: "No run yet on an Armada younger than maxAge: nothing is wrong yet.",
			obs:    nil,
			now:    created.Add(48 * time.Hour),
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "NotRunYet", Age: "48h",
			}, cond: true, reason: ReasonDrillNotRunYet},
		},
		"NeverRunOld": {
			reason: "No run in longer than maxAge since the Armada was created: overdue.",
			obs:    &DrillObserved{},
			now:    now,
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "NotRunYet", Age: "852h", Overdue: true,
			}, reason: ReasonDrillOverdue},
		},
		"NoClock": {
			reason: "A render without a clock reports no age and never overdue.",
			obs:    &DrillObserved{LastSchedule: at("2026-11-20T04:00:00Z"), LastSuccessful: at("2026-11-20T04:10:00Z")},
			want: want{status: v1alpha1.RestoreDrillStatus{
				CronJob: "armada-restore-drill", Outcome: "Succeeded", LastRun: "2026-11-20T04:00:00Z", LastVerifiedRestore: "2026-11-20T04:10:00Z",
			}, cond: true, reason: ReasonDrillSucceeded},
		},
	}
	in, errs := New(claimed(backupSpec(DefaultVersion)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, cond := in.drillStatus(tc.obs, created, tc.now)
			if diff := cmp.Diff(tc.want, want{status: *st, cond: cond.Status, reason: cond.Reason}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\ndrillStatus(...): -want, +got:\n%s\nmessage: %s", tc.reason, diff, cond.Message)
			}
			if cond.Type != ConditionRestoreDrill || cond.Message == "" {
				t.Errorf("condition %q with message %q, want %s with a message", cond.Type, cond.Message, ConditionRestoreDrill)
			}
		})
	}
}

func TestObserveDrill(t *testing.T) {
	got := Observe(map[string]*unstructured.Unstructured{
		keyDrillCronJob: {Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "CronJob",
			"status": map[string]any{
				"lastScheduleTime": "2026-12-06T04:00:00Z", "lastSuccessfulTime": "2026-12-06T04:12:00Z",
				"active": []any{map[string]any{"name": "armada-restore-drill-29000000"}},
			},
		}},
	})
	want := &DrillObserved{
		LastSchedule:   time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC),
		LastSuccessful: time.Date(2026, 12, 6, 4, 12, 0, 0, time.UTC),
		Active:         1,
	}
	if diff := cmp.Diff(want, got.Drill); diff != "" {
		t.Errorf("Observe(...).Drill: -want, +got:\n%s", diff)
	}
	if len(got.Pruners) != 0 {
		t.Errorf("the drill's CronJob is observed as a pruner %v: it would hold migrations", got.Pruners)
	}
}

// TestDrillSecretsOnlyByReference proves the drill's pod carries every
// credential as a Secret reference.
func TestDrillSecretsOnlyByReference(t *testing.T) {
	in, errs := New(claimed(backupSpec(DefaultVersion)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, e := range in.drillEnv() {
		if strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "PASSWORD") {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s is not a Secret reference: %+v", e.Name, e)
			}
		}
	}
}
