package jobflow

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
)

// testAttackJobs submits, through armadactl as a user with only submit on
// the queue, the jobs of issue 44's first attack: each asks the executor
// for a pod beside the Armada or with its powers. Armada accepts and
// schedules them; the executor's pod creation is refused by the Armada's
// admission policy, and the job ends Failed with the rule that refused it
// in its failure reason, in armadactl's events and in Lookout. A
// well-behaved job in the job namespace still succeeds (the Succeeded
// subtest).
func testAttackJobs(t *testing.T, f *flow, submitterPassword string) {
	t.Helper()
	ctx := t.Context()
	a := f.a
	withPod := func(ns string, mod func(job, pod map[string]any)) map[string]any {
		j := jobflow.JobSpec(ns, nil)
		mod(j, j["podSpec"].(map[string]any))
		return j
	}
	cases := map[string]struct {
		job  map[string]any
		rule string
	}{
		"armadas-namespace": {
			job:  withPod(ns, func(map[string]any, map[string]any) {}),
			rule: armada.RuleJobNamespace,
		},
		"executor-sa": {
			job:  withPod(jobsNamespace, func(_, p map[string]any) { p["serviceAccountName"] = "armada-executor-" + f.clusterID }),
			rule: armada.RuleServiceAccount,
		},
		"tls-secret": {
			job: withPod(jobsNamespace, func(_, p map[string]any) {
				p["volumes"] = []any{map[string]any{"name": "tls", "secret": map[string]any{"secretName": claimName + "-tls"}}}
			}),
			rule: armada.RuleComposedSecrets,
		},
		"scheduler-labels": {
			job: withPod(jobsNamespace, func(j, _ map[string]any) {
				j["labels"] = map[string]any{
					"app.kubernetes.io/name": "armada", "app.kubernetes.io/instance": claimName, "app.kubernetes.io/component": "scheduler",
				}
			}),
			rule: armada.RuleComponentLabels,
		},
	}
	for name, tc := range cases {
		if out, err := a.Submit(ctx, "submitter", submitterPassword, queue, "attack-"+name, tc.job); err != nil {
			t.Fatalf("%s: %v\n%s", a.Command("submit", "attack-"+name+".yaml"), err, out)
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobSet := "attack-" + name
			evs := watch(ctx, t, a, "admin", f.adminPassword, jobSet)
			if got := jobflow.Types(evs); !jobflow.IsSubsequence([]string{"Submitted", "Queued", "Leased", "Failed"}, got) || slices.Contains(got, "Running") {
				t.Fatalf("events of job set %s: got %v, want Leased then Failed, never Running; events:\n%s", jobSet, got, jobflow.RawEvents(evs))
			}
			want := "rule " + tc.rule + ":"
			i := slices.IndexFunc(evs, func(e jobflow.Event) bool { return e.Type == "Failed" })
			raw, _ := json.Marshal(evs[i].Raw)
			if !strings.Contains(string(raw), want) {
				t.Errorf("armadactl: job set %s's Failed event is %s; want a reason naming %q", jobSet, raw, want)
			}
			jobs := jobflow.WaitLookout(t, f.lookout, f.adminPassword, jobSet, "FAILED")
			msg, err := jobflow.LookoutJobError(ctx, f.lookout, "admin", f.adminPassword, jobs[0].JobID)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msg, want) {
				t.Errorf("lookout: job %s's error is %q; want it to name %q", jobs[0].JobID, msg, want)
			}
		})
	}
}
