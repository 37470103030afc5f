package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations the test reads or writes.
const (
	annotationRestart = "armadaproject.io/restart"
	annotationPaused  = "crossplane.io/paused"
	// pausedFor is how long the test watches a paused XR for changes.
	pausedFor = 15 * time.Second
)

// TestOperatorActions pauses, restarts and prunes on the real control
// plane: the minimal example composes both database pruner CronJobs; with
// Crossplane's crossplane.io/paused annotation on the XR a restart set on
// the claim reaches the XR but the function is not called and no workload
// changes (the XR is Synced=False ReconcilePaused); removing the
// annotation rolls exactly the scheduler (its StatefulSet's pod template
// gets the token, the lookout Deployment's does not), status.actions
// reports it done once the scheduler is ready, and another reconcile with
// the same token changes nothing. The kubelet does not run: "ready" is
// what simulate.MarkHealthy reports.
func TestOperatorActions(t *testing.T) {
	parallel(t)
	const ns = "e2e-actions"
	claim := install(t, "minimal", ns)
	converge(t, claim)
	for _, db := range []string{"scheduler", "lookout"} {
		cj := &batchv1.CronJob{}
		if err := kube().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "armada-prune-" + db}, cj); err != nil {
			t.Fatalf("the %s pruner CronJob: %v", db, err)
		}
		if cj.Spec.Schedule != "@hourly" || cj.Spec.Suspend == nil || *cj.Spec.Suspend {
			t.Errorf("the %s pruner CronJob: schedule %q, suspend %v; want @hourly, running", db, cj.Spec.Schedule, cj.Spec.Suspend)
		}
	}
	lookoutBefore := templateAnnotations(t, &appsv1.Deployment{}, ns, "armada-lookout")

	xr, _ := composed(t, claim)
	mergePatch(t, xr, fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, annotationPaused))
	waitFor(t, "XR Synced=False ReconcilePaused", func() (bool, string) {
		s, r, m := condition(get(t, xr.GetAPIVersion(), xr.GetKind(), "", xr.GetName()), "Synced")
		return s == "False" && r == "ReconcilePaused", fmt.Sprintf("Synced=%s %s: %s", s, r, m)
	})
	calls := functionCallsFor(t, xr.GetName())
	mergePatch(t, get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName()), `{"spec":{"actions":{"restart":{"scheduler":"r1"}}}}`)
	waitFor(t, "the claim's restart copied to the paused XR", func() (bool, string) {
		got, _, _ := unstructured.NestedString(get(t, xr.GetAPIVersion(), xr.GetKind(), "", xr.GetName()).Object, "spec", "actions", "restart", "scheduler")
		return got == "r1", "spec.actions.restart.scheduler = " + got
	})
	time.Sleep(pausedFor)
	if got := templateAnnotations(t, &appsv1.StatefulSet{}, ns, "armada-scheduler")[annotationRestart]; got != "" {
		t.Errorf("the scheduler's template got restart token %q while the XR was paused", got)
	}
	if n := functionCallsFor(t, xr.GetName()) - calls; n != 0 {
		t.Errorf("function-armada was called %d times for the paused XR in %s, want 0", n, pausedFor)
	}

	mergePatch(t, get(t, xr.GetAPIVersion(), xr.GetKind(), "", xr.GetName()), fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, annotationPaused))
	waitFor(t, "the scheduler's template carries the restart token", func() (bool, string) {
		got := templateAnnotations(t, &appsv1.StatefulSet{}, ns, "armada-scheduler")[annotationRestart]
		return got == "r1", "restart annotation " + got
	})
	converge(t, claim)
	waitFor(t, "status.actions.restarts.scheduler done", func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
		done, _, _ := unstructured.NestedBool(c.Object, "status", "actions", "restarts", "scheduler", "done")
		st, _, _ := unstructured.NestedFieldNoCopy(c.Object, "status", "actions")
		return done, fmt.Sprintf("status.actions = %v", st)
	})
	if got := templateAnnotations(t, &appsv1.Deployment{}, ns, "armada-lookout"); got[annotationRestart] != "" || len(got) != len(lookoutBefore) {
		t.Errorf("Lookout's template annotations changed on the scheduler's restart: %v, were %v", got, lookoutBefore)
	}

	// The same token again changes nothing.
	before := settled(t, claim)
	touchXR(t, claim)
	unchanged(t, before, settled(t, claim))
}

// TestBackupNow takes an on-demand Backup of the backups example's
// in-cluster PostgreSQL from the claim, and reports its phase in the
// claim's status; a failed Backup is reported and a new token takes
// another. CloudNativePG does not run here: the test sets the Backup's
// status.phase as its operator would.
func TestBackupNow(t *testing.T) {
	parallel(t)
	const ns = "e2e-backup-now"
	claim := install(t, "backups", ns)
	converge(t, claim)
	take := func(token, phase string) {
		t.Helper()
		name := claim.GetName() + "-postgres-now-" + token
		mergePatch(t, get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName()), fmt.Sprintf(`{"spec":{"actions":{"backup":%q}}}`, token))
		waitFor(t, "Backup "+name+" composed", func() (bool, string) {
			return get(t, "postgresql.cnpg.io/v1", "Backup", ns, name) != nil, "not yet"
		})
		setBackupPhase(t, ns, name, phase)
		waitFor(t, "status.actions.backup "+phase, func() (bool, string) {
			c := get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
			b, _, _ := unstructured.NestedStringMap(c.Object, "status", "actions", "backup")
			return b["name"] == name && b["phase"] == phase && b["time"] != "", fmt.Sprintf("status.actions.backup = %v", b)
		})
	}
	take("b1", "failed")
	take("b2", "completed")
	waitFor(t, "the first token's Backup removed", func() (bool, string) {
		return get(t, "postgresql.cnpg.io/v1", "Backup", ns, claim.GetName()+"-postgres-now-b1") == nil, "still there"
	})
	converge(t, claim)
}

// templateAnnotations are a workload's pod template annotations.
func templateAnnotations(t *testing.T, obj client.Object, ns, name string) map[string]string {
	t.Helper()
	if err := kube().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Template.Annotations
	case *appsv1.StatefulSet:
		return w.Spec.Template.Annotations
	}
	t.Fatalf("%T is not a workload", obj)
	return nil
}

// mergePatch applies a JSON merge patch to an object.
func mergePatch(t *testing.T, u *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := kube().Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("cannot patch %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
