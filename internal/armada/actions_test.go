package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// restartTokens are the restart annotations of a render's workloads, by
// instance (absent: none).
func restartTokens(out *Output) map[string]string {
	got := map[string]string{}
	for key, tpl := range podTemplates(out) {
		if t, ok := tpl.Annotations[annotationRestart]; ok {
			got[key[:len(key)-len(keyWorkloadSuffix)]] = t
		}
	}
	return got
}

// running observes every workload of a render as running it, ready.
func running(out *Output) map[string]Workload {
	w := map[string]Workload{}
	for key, tpl := range podTemplates(out) {
		w[key[:len(key)-len(keyWorkloadSuffix)]] = Workload{
			Version: tpl.Labels[labelVersion], Ready: true, ConfigHash: tpl.Annotations[annotationConfigHash], Restart: tpl.Annotations[annotationRestart],
		}
	}
	return w
}

// TestRestart: a restart token rolls exactly the pods it names, once; a
// token left in place changes nothing on later renders.
func TestRestart(t *testing.T) {
	cases := map[string]struct {
		reason  string
		restart map[string]v1alpha1.RestartToken
		want    map[string]string
	}{
		"None": {
			reason: "Without spec.actions no template carries a restart annotation, so nothing rolls.",
			want:   map[string]string{},
		},
		"One": {
			reason:  "A component's token rolls that component only.",
			restart: map[string]v1alpha1.RestartToken{"scheduler": "1"},
			want:    map[string]string{"scheduler": "1"},
		},
		"All": {
			reason:  "The all token rolls every workload, a component's own token stays on it.",
			restart: map[string]v1alpha1.RestartToken{"all": "a", "lookout": "2"},
			want: map[string]string{
				"server": "all=a", "scheduler": "all=a", "scheduler-ingester": "all=a", "lookout": "all=a,lookout=2",
				"lookout-ingester": "all=a", "event-ingester": "all=a", "binoculars": "all=a", "executor-local": "all=a",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(func(s *v1alpha1.ArmadaSpec) {
				if tc.restart != nil {
					s.Actions = &v1alpha1.Actions{Restart: tc.restart}
				}
			})
			out := render(t, s, Observed{Jobs: migrated(t, s)})
			if diff := cmp.Diff(tc.want, restartTokens(out)); diff != "" {
				t.Errorf("%s\nrestart annotations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRestartStatus: a restart is pending until every workload it names
// runs a template carrying its token and is ready, then done; rendering
// again from there composes the same templates.
func TestRestartStatus(t *testing.T) {
	s := spec()
	jobs := migrated(t, s)
	before := render(t, s, Observed{Jobs: jobs})
	restarted := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Actions = &v1alpha1.Actions{Restart: map[string]v1alpha1.RestartToken{"scheduler": "r1"}}
	})

	out := render(t, restarted, Observed{Jobs: jobs, Workloads: running(before)})
	want := &v1alpha1.ActionsStatus{Restarts: map[string]v1alpha1.RestartStatus{"scheduler": {Token: "r1", Pending: []string{"scheduler"}}}}
	if diff := cmp.Diff(want, out.Status.Actions); diff != "" {
		t.Errorf("before the scheduler rolled: status.actions (-want +got):\n%s", diff)
	}

	done := render(t, restarted, Observed{Jobs: jobs, Workloads: running(out)})
	want = &v1alpha1.ActionsStatus{Restarts: map[string]v1alpha1.RestartStatus{"scheduler": {Token: "r1", Done: true}}}
	if diff := cmp.Diff(want, done.Status.Actions); diff != "" {
		t.Errorf("after the scheduler rolled: status.actions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(podTemplates(out), podTemplates(done)); diff != "" {
		t.Errorf("rendering a done restart again changed the templates (-first +again):\n%s", diff)
	}
}

// TestBackupNow: a backup token composes one on-demand Backup of the
// in-cluster PostgreSQL, reported with its phase, done once it completed
// or failed.
func TestBackupNow(t *testing.T) {
	s := backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) { s.Actions = &v1alpha1.Actions{Backup: "b1"} })
	name := "armada-postgres-now-b1"
	cases := map[string]struct {
		reason    string
		observed  map[string]BackupObserved
		wantPhase string
		wantReady bool
	}{
		"Unobserved": {reason: "The Backup is composed at once and reported as not observed yet.", wantPhase: backupUnobserved},
		"Running":    {reason: "A running Backup is not done.", observed: map[string]BackupObserved{name: {Phase: "running", Time: "t0"}}, wantPhase: "running"},
		"Completed": {
			reason:   "A completed Backup is done.",
			observed: map[string]BackupObserved{name: {Phase: backupCompleted, Time: "t1"}}, wantPhase: backupCompleted, wantReady: true,
		},
		"Failed": {
			reason:   "A failed Backup is done too: it is reported, not retried; a new token takes another.",
			observed: map[string]BackupObserved{name: {Phase: backupFailed, Time: "t1"}}, wantPhase: backupFailed, wantReady: true,
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			o := inClusterReady("", nil)
			if tc.observed != nil {
				o.Backups = tc.observed
			}
			out := render(t, s, o)
			obj := find(out, keyBackupNow+"b1")
			if obj == nil {
				t.Fatalf("%s\nno on-demand Backup composed", tc.reason)
			}
			u := obj.Object.(*unstructured.Unstructured)
			cluster, _, _ := unstructured.NestedString(u.Object, "spec", "cluster", "name")
			if u.GetKind() != "Backup" || u.GetName() != name || cluster != "armada-postgres" {
				t.Errorf("composed %s %s of cluster %s, want Backup %s of armada-postgres", u.GetKind(), u.GetName(), cluster, name)
			}
			if obj.Ready != tc.wantReady {
				t.Errorf("%s\nready = %t, want %t", tc.reason, obj.Ready, tc.wantReady)
			}
			b := out.Status.Actions.Backup
			if b == nil || b.Name != name || b.Phase != tc.wantPhase || b.Time != tc.observed[name].Time {
				t.Errorf("%s\nstatus.actions.backup = %+v, want %s in phase %q", tc.reason, b, name, tc.wantPhase)
			}
		})
	}
}

func TestValidateActions(t *testing.T) {
	p := field.NewPath("spec", "actions")
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   field.ErrorList
	}{
		"Valid": {
			reason: "all, components and executors by clusterId are restart keys; backups need the in-cluster PostgreSQL's.",
			spec: backupSpec(DefaultVersion, func(s *v1alpha1.ArmadaSpec) {
				s.Actions = &v1alpha1.Actions{Restart: map[string]v1alpha1.RestartToken{"all": "1", "scheduler-ingester": "1", "executor-local": "1"}, Backup: "b"}
			}),
		},
		"UnknownComponent": {
			reason: "A key that names no component would restart nothing.",
			spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Actions = &v1alpha1.Actions{Restart: map[string]v1alpha1.RestartToken{"schedulr": "1"}}
			}),
			want: field.ErrorList{field.NotSupported[string](p.Child("restart").Key("schedulr"), "schedulr", nil)},
		},
		"BackupWithoutBackups": {
			reason: "An external PostgreSQL has no backups of this Armada's to take.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.Actions = &v1alpha1.Actions{Backup: "b"} }),
			want:   field.ErrorList{field.Invalid(p.Child("backup"), "b", "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := tc.spec
			applyDefaults(&s, "")
			got := validateActions(p, &s)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(field.Error{}, "Detail")); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
