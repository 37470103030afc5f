package armada

import (
	"maps"
	"strings"
	"testing"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// failing observes the named database's migration Job as failed and every
// other Job rendering s composes as complete.
func failing(t *testing.T, s v1alpha1.ArmadaSpec, db string) map[string]JobState {
	t.Helper()
	jobs := migrated(t, s)
	n := 0
	for name := range jobs {
		if strings.Contains(name, "-migrate-"+db+"-") {
			jobs[name] = JobFailed
			n++
		}
	}
	if n != 1 {
		t.Fatalf("found %d %s migration Jobs, want 1", n, db)
	}
	return jobs
}

// TestFailedMigration: a failed migration is reported with reason Failed,
// its Job is kept for its logs, and the components on that database are
// held (not created on a fresh install, kept on their old image on an
// upgrade) while the others run.
func TestFailedMigration(t *testing.T) {
	t.Run("FreshInstall", func(t *testing.T) {
		s := spec()
		out := render(t, s, Observed{Jobs: failing(t, s, dbScheduler)})
		cond := conditionOf(t, out, ConditionMigrations)
		if cond.Status || cond.Reason != ReasonFailed || !strings.Contains(cond.Message, "Migration Job for scheduler of Armada "+DefaultVersion+" failed") {
			t.Errorf("Migrations condition = %+v, want False, Failed, naming the scheduler migration", cond)
		}
		if find(out, "migrate-scheduler-") == nil {
			t.Errorf("the failed migration Job is not composed: deleting it loses its logs")
		}
		for _, k := range []string{"scheduler-workload", "scheduler-ingester-workload"} {
			if find(out, k) != nil {
				t.Errorf("%s is composed although its database's migration failed", k)
			}
		}
		for _, k := range []string{"server-workload", "lookout-workload", "lookout-ingester-workload"} {
			if find(out, k) == nil {
				t.Errorf("%s is held although its database migrated", k)
			}
		}
		if out.Ready {
			t.Errorf("Output.Ready = true with a failed migration")
		}
	})
	t.Run("Upgrade", func(t *testing.T) {
		older := SupportedVersions[len(SupportedVersions)-2]
		oldSpec := spec(func(s *v1alpha1.ArmadaSpec) { s.Version = older })
		s := spec(func(s *v1alpha1.ArmadaSpec) { s.Version = DefaultVersion })
		jobs := migrated(t, oldSpec)
		maps.Copy(jobs, failing(t, s, dbScheduler))
		out := render(t, s, Observed{Jobs: jobs, Workloads: map[string]Workload{
			"scheduler": {Version: older, Ready: true}, "server": {Version: older, Ready: true},
		}})
		if c := conditionOf(t, out, ConditionMigrations); c.Reason != ReasonFailed {
			t.Errorf("Migrations condition = %+v, want reason Failed", c)
		}
		tpl, ok := podTemplates(out)["scheduler-workload"]
		if !ok {
			t.Fatalf("the running scheduler is not composed: a failed migration must not remove it")
		}
		want := "gresearch/armada-scheduler:" + older
		if got := tpl.Spec.Containers[0].Image; got != want {
			t.Errorf("scheduler image after a failed migration = %s, want the running %s", got, want)
		}
		if j := find(out, "migrate-scheduler-"+strings.ReplaceAll(DefaultVersion, ".", "-")+"-"); j == nil {
			t.Errorf("the failed %s scheduler migration Job is not kept", DefaultVersion)
		}
	})
}

// conditionOf returns the output's condition of a type.
func conditionOf(t *testing.T, out *Output, typ string) Condition {
	t.Helper()
	for _, c := range out.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", typ, out.Conditions)
	return Condition{}
}
