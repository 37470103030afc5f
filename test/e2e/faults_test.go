package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFaults kills function-armada and then Crossplane while a reconcile
// of the claim is provably in flight: the function is paused (SIGSTOP),
// the claim changed, and the test waits until Crossplane's call sits
// unread in the function's socket before killing. After the restarts the
// claim converges with no duplicate, no deleted object and the same
// generated passwords, CA and certificates.
func TestFaults(t *testing.T) {
	ns := "e2e-faults"
	claim := applyExample(t, "minimal", ns)
	ctx := context.Background()
	// A failure half-way must not leave the function paused or stopped,
	// nor Crossplane stopped, for every later test.
	t.Cleanup(func() {
		if err := cp.Restore(ctx); err != nil {
			t.Errorf("cannot restore the control plane after fault injection: %v", err)
		}
	})
	// The passwords the first process generated: each process derives new
	// ones from its own random key, so they survive a restart only if the
	// function reuses what it observes.
	var before, tlsBefore map[string][]byte
	waitFor(t, "credentials and TLS Secrets composed", func() (bool, string) {
		before, tlsBefore = credentialsData(t, ns), secretData(t, ns, "tls")
		return len(before) > 0 && len(tlsBefore) > 0, "not yet"
	})
	claimCondition(t, claim, "Synced", "True")
	xr, mid := composed(t, claim)
	markHealthy(t, mid)

	// settle waits until the function has composed the XR no more for a
	// few seconds (at most patience), so that a pause does not catch it
	// halfway through a call.
	const patience = 30 * time.Second
	settle := func() {
		t.Helper()
		last, since, start := functionCallsFor(t, xr.GetName()), time.Now(), time.Now()
		for time.Since(since) < 3*time.Second && time.Since(start) < patience {
			time.Sleep(250 * time.Millisecond)
			if n := functionCallsFor(t, xr.GetName()); n != last {
				last, since = n, time.Now()
			}
		}
	}

	// inFlight pauses the function, changes the claim and waits until
	// Crossplane's call for it is sent and unread. A call the function had
	// already read when paused holds the XR's reconcile until Crossplane
	// gives up on it, so if no call arrives soon it resumes the function,
	// lets that call and the reconcile it held finish, and tries again.
	replicas := int64(1)
	inFlight := func(what string) {
		t.Helper()
		const attempts = 3
		for attempt := 1; ; attempt++ {
			settle()
			if err := cp.PauseFunction(); err != nil {
				t.Fatal(err)
			}
			replicas++
			if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(c.Object, replicas, "spec", "components", "lookout", "replicas")
			}); err != nil {
				t.Fatal(err)
			}
			unread, err := 0, error(nil)
			for start := time.Now(); time.Since(start) < patience; time.Sleep(250 * time.Millisecond) {
				if unread, err = cp.FunctionUnread(); err == nil && unread > 0 {
					t.Logf("killing %s with Crossplane's call (%d bytes) unread by the paused function", what, unread)
					return
				}
			}
			if attempt == attempts {
				t.Fatalf("no call in flight %s after pausing the function, %d times (last: %d unread bytes, %v)\n%s",
					patience, attempts, unread, err, cp.LogTails(30))
			}
			t.Logf("no call in flight %s after pausing the function; resuming it and trying again", patience)
			if err := cp.ResumeFunction(); err != nil {
				t.Fatal(err)
			}
		}
	}

	inFlight("function-armada")
	calls := functionCalls(t)
	if err := cp.StopFunction(); err != nil {
		t.Fatal(err)
	}
	if err := cp.StartFunction(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a reconcile by the restarted function", func() (bool, string) {
		return functionCalls(t) > calls, "none yet"
	})

	inFlight("Crossplane")
	if err := cp.StopCrossplane(); err != nil {
		t.Fatal(err)
	}
	if err := cp.ResumeFunction(); err != nil {
		t.Fatal(err)
	}
	markHealthy(t, mid)
	if err := cp.StartCrossplane(ctx); err != nil {
		t.Fatal(err)
	}
	converge(t, claim)
	_, refs := composed(t, claim)
	for _, r := range mid {
		if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
			t.Errorf("%s was deleted across the restarts", r)
		}
	}
	deployments := &appsv1.DeploymentList{}
	if err := kube().List(ctx, deployments, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if got, want := len(deployments.Items), len(byKind(refs, "Deployment")); got != want {
		t.Errorf("%d Deployments in %s, want exactly the %d composed (no duplicates)", got, ns, want)
	}
	if diff := cmp.Diff(before, credentialsData(t, ns)); diff != "" {
		t.Errorf("generated passwords changed across the restarts: -before, +after:\n%s", diff)
	}
	if diff := cmp.Diff(tlsBefore, secretData(t, ns, "tls")); diff != "" {
		t.Errorf("the generated CA or certificates changed across the restarts: -before, +after:\n%s", diff)
	}
}
