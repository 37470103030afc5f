package provider_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// testRelease checks how a Queue lets go of its Armada: when its
// ProviderConfig is being deleted (its Armada is being deleted by design) a
// Queue deletes its queue if Armada answers and is released within the
// bound if it does not; a live Armada that is unreachable is waited for,
// however long; and the ProviderConfig never hangs, not even on a Queue
// that is not being deleted.
func testRelease(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	params := armadav1.QueueParameters{PriorityFactor: "1"}
	// ready creates a Queue and waits until its queue is in Armada.
	ready := func(t *testing.T, ns, name string) {
		t.Helper()
		e.create(ctx, t, newQueue(ns, name, params))
		e.waitFor(ctx, t, ns, name, conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
	}
	del := func(t *testing.T, o client.Object) {
		t.Helper()
		if err := e.kube.Delete(ctx, o); err != nil {
			t.Fatalf("cannot delete %s: %v", o.GetName(), err)
		}
	}
	pc := func(ns string) *armadav1.ProviderConfig {
		return &armadav1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "armada"}}
	}
	// configGone waits until the namespace's ProviderConfig is deleted.
	configGone := func(t *testing.T, ns string) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			err := e.kube.Get(ctx, clientKey(ns, "armada"), &armadav1.ProviderConfig{})
			if kerrors.IsNotFound(err) {
				return time.Since(start)
			}
			if time.Since(start) > waitTimeout {
				t.Fatalf("ProviderConfig %s/armada still exists %s after its deletion (%v)", ns, waitTimeout, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("ArmadaAnswers", func(t *testing.T) {
		// The Armada is being deleted but still answers: the queue is
		// deleted in it before the Queue goes.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		ready(t, ns, "q")
		del(t, pc(ns))
		del(t, newQueue(ns, "q", params))
		e.waitFor(ctx, t, ns, "q", gone)
		configGone(t, ns)
		if _, ok := s.Queue("q"); ok {
			t.Error("Armada still has queue q: a Queue whose Armada answers must delete it")
		}
	})

	t.Run("ArmadaGone", func(t *testing.T) {
		// The Armada is being deleted and no longer answers: the Queue
		// and the ProviderConfig go well within the release period.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		ready(t, ns, "q")
		s.Stop()
		start := time.Now()
		del(t, pc(ns))
		del(t, newQueue(ns, "q", params))
		e.waitFor(ctx, t, ns, "q", gone)
		configGone(t, ns)
		if d := time.Since(start); d >= releaseAfter {
			t.Errorf("Queue and ProviderConfig gone %s after deletion; want under the release period %s when Armada cannot be reached", d, releaseAfter)
		} else {
			t.Logf("Queue and ProviderConfig gone %s after deletion, Armada unreachable", d.Round(time.Millisecond))
		}
		if _, ok := s.Queue("q"); !ok {
			t.Error("the unreachable Armada lost queue q")
		}
		// The release is recorded, naming the queue left in Armada.
		msg := ""
		for deadline := time.Now().Add(waitTimeout); msg == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			l := &corev1.EventList{}
			if err := e.kube.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, ev := range l.Items {
				if ev.Reason == "ReleasedWithArmada" && ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.Name == "q" {
					msg = ev.Message
				}
			}
		}
		if !strings.Contains(msg, "queue q is not deleted in Armada") {
			t.Errorf("no Warning event ReleasedWithArmada naming queue q (got %q)", msg)
		}
	})

	t.Run("ArmadaRefuses", func(t *testing.T) {
		// The Armada is being deleted, answers, and refuses to delete the
		// queue: the Queue waits the release period, then goes.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		ready(t, ns, "q")
		s.Deny(adminUser, true)
		start := time.Now()
		del(t, pc(ns))
		del(t, newQueue(ns, "q", params))
		e.waitFor(ctx, t, ns, "q", gone)
		configGone(t, ns)
		if d := time.Since(start); d < releaseAfter {
			t.Errorf("Queue released %s after deletion while Armada answered; want no sooner than the release period %s", d, releaseAfter)
		}
	})

	t.Run("LiveArmadaUnreachable", func(t *testing.T) {
		// The ProviderConfig stays: a Queue being deleted while its Armada
		// is unreachable waits past the release period, then deletes the
		// queue once Armada is back. Nothing is dropped silently.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		ready(t, ns, "q")
		s.Stop()
		del(t, newQueue(ns, "q", params))
		time.Sleep(releaseAfter + 2*time.Second)
		e.waitFor(ctx, t, ns, "q", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileError, "Armada is unavailable"))
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		e.waitFor(ctx, t, ns, "q", gone)
		if _, ok := s.Queue("q"); ok {
			t.Error("Armada still has queue q after it came back and the Queue was deleted")
		}
	})

	t.Run("TeamQueueOnDeletedArmada", func(t *testing.T) {
		// A Queue that is not being deleted (a team's, on an Armada being
		// deleted) lets the ProviderConfig go once Armada cannot be
		// reached, keeps its queue and says so; deleted later, it goes at
		// once.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		ready(t, ns, "team")
		s.Stop()
		start := time.Now()
		del(t, pc(ns))
		d := configGone(t, ns)
		if d >= releaseAfter {
			t.Errorf("ProviderConfig gone %s after deletion; want under the release period %s", d, releaseAfter)
		}
		q := e.waitFor(ctx, t, ns, "team", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileError, "cannot get ProviderConfig "+ns+"/armada"))
		if q.GetDeletionTimestamp() != nil {
			t.Error("the team's Queue is being deleted: only its Armada was")
		}
		if err := e.kube.Get(ctx, clientKey(ns, string(q.GetUID())), &armadav1.ProviderConfigUsage{}); !kerrors.IsNotFound(err) {
			t.Errorf("the team's Queue still records a usage of the deleted ProviderConfig (%v)", err)
		}
		del(t, newQueue(ns, "team", params))
		e.waitFor(ctx, t, ns, "team", gone)
		t.Logf("ProviderConfig gone %s, the team's Queue %s after deletion began", d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if _, ok := s.Queue("team"); !ok {
			t.Error("the team's queue was removed from Armada")
		}
	})
}
