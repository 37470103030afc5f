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
		job map[string]any
		// want is in the failure reason: the rule that refused the pod,
		// or, in the Armada's own namespace, where the executor holds no
		// rights at all, the authorizer's refusal, before admission.
		want string
	}{
		"armadas-namespace": {
			job:  withPod(ns, func(map[string]any, map[string]any) {}),
			want: `cannot create resource "pods" in API group "" in the namespace "` + ns + `"`,
		},
		"executor-sa": {
			job:  withPod(jobsNamespace, func(_, p map[string]any) { p["serviceAccountName"] = "armada-executor-" + f.clusterID }),
			want: "rule " + armada.RuleServiceAccount + ":",
		},
		"tls-secret": {
			job: withPod(jobsNamespace, func(_, p map[string]any) {
				p["volumes"] = []any{map[string]any{"name": "tls", "secret": map[string]any{"secretName": claimName + "-tls"}}}
			}),
			want: "rule " + armada.RuleComposedSecrets + ":",
		},
		"scheduler-labels": {
			job: withPod(jobsNamespace, func(j, _ map[string]any) {
				j["labels"] = map[string]any{
					"app.kubernetes.io/name": "armada", "app.kubernetes.io/instance": claimName, "app.kubernetes.io/component": "scheduler",
				}
			}),
			want: "rule " + armada.RuleComponentLabels + ":",
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
			want := tc.want
			i := slices.IndexFunc(evs, func(e jobflow.Event) bool { return e.Type == "Failed" })
			if reason, _ := evs[i].Raw["reason"].(string); !strings.Contains(reason, want) {
				raw, _ := json.Marshal(evs[i].Raw)
				t.Errorf("armadactl: job set %s's Failed event is %s; want a reason with %q", jobSet, raw, want)
			} else {
				t.Logf("armadactl: Failed: %s", reason)
			}
			jobs := jobflow.WaitLookout(t, f.lookout, f.adminPassword, jobSet, "FAILED")
			if len(jobs[0].Runs) == 0 {
				t.Fatalf("lookout: job %s has no run", jobs[0].JobID)
			}
			run := jobs[0].Runs[len(jobs[0].Runs)-1].RunID
			msg, err := jobflow.LookoutRunError(ctx, f.lookout, "admin", f.adminPassword, run)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msg, want) {
				t.Errorf("lookout: job %s's run %s failed with %q; want it to name %q", jobs[0].JobID, run, msg, want)
			}
		})
	}
}
