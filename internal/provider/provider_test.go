package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

// armadaQueue is Armada's Queue message.
type armadaQueue = api.Queue

// allVerbs is every verb, as Armada grants a queue's owners.
var allVerbs = []string{"submit", "cancel", "preempt", "reprioritize", "watch"}

// TestQueue drives the real managed reconciler, running in-process against
// a real kube-apiserver, through a queue's life in an in-memory Armada.
func TestQueue(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()

	t.Run("Validation", func(t *testing.T) { testValidation(ctx, t, e) })
	t.Run("Examples", func(t *testing.T) { testExamples(ctx, t, e) })
	t.Run("Release", func(t *testing.T) { testRelease(ctx, t, e) })

	t.Run("Lifecycle", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		params := armadav1.QueueParameters{
			PriorityFactor: "1.5",
			GroupOwners:    []string{"team-a"},
			Permissions: []armadav1.QueuePermission{{
				Subjects: []armadav1.PermissionSubject{{Kind: armadav1.SubjectKindGroup, Name: "ops"}},
				Verbs:    []armadav1.PermissionVerb{armadav1.VerbWatch, armadav1.VerbCancel},
			}},
			ResourceLimitsByPriorityClassName: map[string]armadav1.PriorityClassResourceLimits{
				"armada-default": {MaximumResourceFraction: map[string]armadav1.Fraction{"cpu": "0.5"}},
			},
			Labels:        map[string]string{"armadaproject.io/team": "a"},
			RetryPolicies: nil,
		}
		e.create(ctx, t, newQueue(ns, "team-a", params))

		// Created, observed and up to date; userOwners late-initialised
		// to the provider's user, whom Armada made the owner.
		q := e.waitFor(ctx, t, ns, "team-a", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		if d := cmp.Diff([]string{adminUser}, q.Spec.ForProvider.UserOwners); d != "" {
			t.Errorf("spec.forProvider.userOwners: -want, +got:\n%s", d)
		}
		if d := cmp.Diff("1.5", q.Status.AtProvider.PriorityFactor); d != "" {
			t.Errorf("status.atProvider.priorityFactor: -want, +got:\n%s", d)
		}
		got, ok := s.Queue("team-a")
		if !ok {
			t.Fatal("Armada has no queue team-a")
		}
		want := &api.Queue{
			Name: "team-a", PriorityFactor: 1.5,
			Permissions: []*api.Queue_Permissions{
				{Subjects: []*api.Queue_Permissions_Subject{{Kind: "User", Name: adminUser}, {Kind: "Group", Name: "team-a"}}, Verbs: allVerbs},
				{Subjects: []*api.Queue_Permissions_Subject{{Kind: "Group", Name: "ops"}}, Verbs: []string{"watch", "cancel"}},
			},
			ResourceLimitsByPriorityClassName: map[string]*api.PriorityClassResourceLimits{
				"armada-default": {MaximumResourceFraction: map[string]float64{"cpu": 0.5}},
			},
			Labels: map[string]string{"armadaproject.io/team": "a"},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Armada's queue: -want, +got:\n%s", d)
		}

		// Edited behind the provider's back: corrected on the next poll.
		edited, _ := s.Queue("team-a")
		edited.PriorityFactor, edited.Cordoned, edited.Permissions = 7, true, edited.Permissions[:1]
		s.SetQueue(edited)
		waitArmada(t, s, "team-a", func(q *armadaQueue, _ bool) string {
			if q.GetPriorityFactor() != 1.5 || q.GetCordoned() || len(q.GetPermissions()) != 2 {
				return fmt.Sprintf("drift not corrected: %v", q)
			}
			return ""
		})

		// Deleted behind the provider's back: NotFound means absent, so
		// the provider creates it again.
		s.RemoveQueue("team-a")
		waitArmada(t, s, "team-a", func(_ *armadaQueue, found bool) string {
			if !found {
				return "not recreated"
			}
			return ""
		})

		// A spec change reaches Armada.
		e.update(ctx, t, ns, "team-a", func(q *armadav1.Queue) { q.Spec.ForProvider.PriorityFactor = "3" })
		waitArmada(t, s, "team-a", func(q *armadaQueue, _ bool) string {
			if q.GetPriorityFactor() != 3 {
				return fmt.Sprintf("priority factor %v, want 3", q.GetPriorityFactor())
			}
			return ""
		})

		// Deleting the Queue deletes Armada's queue, then the Queue.
		if err := e.kube.Delete(ctx, newQueue(ns, "team-a", params)); err != nil {
			t.Fatalf("cannot delete Queue: %v", err)
		}
		e.waitFor(ctx, t, ns, "team-a", gone)
		if _, ok := s.Queue("team-a"); ok {
			t.Error("Armada still has queue team-a after its Queue was deleted")
		}
	})

	t.Run("PermissionDenied", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), viewerUser, viewerPassword)
		e.create(ctx, t, newQueue(ns, "denied", armadav1.QueueParameters{PriorityFactor: "1"}))
		e.waitFor(ctx, t, ns, "denied", conditions(xpv2.ReasonCreating, xpv2.ReasonReconcileError,
			`create failed: cannot create queue: permission denied: user "viewer" lacks permission create_queue`))
		if _, ok := s.Queue("denied"); ok {
			t.Error("Armada created a queue for a user without create_queue")
		}
	})

	t.Run("Unauthenticated", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, "wrong-password")
		e.create(ctx, t, newQueue(ns, "unauthenticated", armadav1.QueueParameters{PriorityFactor: "1"}))
		e.waitFor(ctx, t, ns, "unauthenticated", conditions("", xpv2.ReasonReconcileError,
			"observe failed: cannot get queue: unauthenticated (check the provider config's credentials)"))
	})

	t.Run("Unavailable", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		e.create(ctx, t, newQueue(ns, "outage", armadav1.QueueParameters{PriorityFactor: "2"}))
		e.waitFor(ctx, t, ns, "outage", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		creates := s.Calls()["CreateQueue"]

		// Armada goes away: the error surfaces and nothing is deleted.
		s.Stop()
		e.waitFor(ctx, t, ns, "outage", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileError,
			"observe failed: cannot get queue: Armada is unavailable"))

		// Armada returns: the Queue is synced again, and its queue was
		// neither deleted nor recreated.
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		q := e.waitFor(ctx, t, ns, "outage", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		calls := s.Calls()
		if calls["DeleteQueue"] != 0 || calls["CreateQueue"] != creates {
			t.Errorf("after the outage: DeleteQueue called %d times, CreateQueue %d times (want 0 and %d)", calls["DeleteQueue"], calls["CreateQueue"], creates)
		}
		if q.GetDeletionTimestamp() != nil {
			t.Error("the Queue is being deleted after an outage")
		}
	})

	t.Run("NotAdopted", func(t *testing.T) {
		// A queue Armada already has, which the Queue did not create (made
		// with armadactl, or another team's of the same name), is neither
		// changed nor deleted: the Queue reports it; with the adopt
		// annotation it takes it over.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		s.SetQueue(&api.Queue{Name: "theirs", PriorityFactor: 5})
		theirs, _ := s.Queue("theirs")
		e.create(ctx, t, newQueue(ns, "theirs", armadav1.QueueParameters{PriorityFactor: "1"}))
		e.waitFor(ctx, t, ns, "theirs", conditions("", xpv2.ReasonReconcileError,
			"observe failed: queue theirs already exists in Armada and this Queue did not create it: it is not adopted (nor ever deleted)"))
		if err := e.kube.Delete(ctx, newQueue(ns, "theirs", armadav1.QueueParameters{})); err != nil {
			t.Fatalf("cannot delete Queue: %v", err)
		}
		e.waitFor(ctx, t, ns, "theirs", gone)
		got, ok := s.Queue("theirs")
		if d := cmp.Diff(theirs, got); !ok || d != "" {
			t.Errorf("Armada's queue theirs after the Queue came and went (found %t): -before, +after:\n%s", ok, d)
		}
		if calls := s.Calls(); calls["UpdateQueue"] != 0 || calls["DeleteQueue"] != 0 {
			t.Errorf("UpdateQueue called %d times, DeleteQueue %d times on a queue not the Queue's; want 0", calls["UpdateQueue"], calls["DeleteQueue"])
		}

		adopt := newQueue(ns, "theirs", armadav1.QueueParameters{PriorityFactor: "2"})
		adopt.SetAnnotations(map[string]string{queue.AnnotationAdopt: "true"})
		e.create(ctx, t, adopt)
		e.waitFor(ctx, t, ns, "theirs", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		waitArmada(t, s, "theirs", func(q *armadaQueue, _ bool) string {
			if q.GetPriorityFactor() != 2 {
				return fmt.Sprintf("priority factor %v, want 2 once adopted", q.GetPriorityFactor())
			}
			return ""
		})
	})

	t.Run("ExternalNameChanged", func(t *testing.T) {
		// A Queue acts only on the queue it created: pointed at another
		// queue by a new external name, it is refused and neither changes
		// nor deletes that queue; deleting it deletes its own.
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		s.SetQueue(&api.Queue{Name: "theirs", PriorityFactor: 5})
		theirs, _ := s.Queue("theirs")
		e.create(ctx, t, newQueue(ns, "mine", armadav1.QueueParameters{PriorityFactor: "1"}))
		q := e.waitFor(ctx, t, ns, "mine", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		if d := cmp.Diff("mine", queue.Created(q)); d != "" {
			t.Errorf("annotation %s: -want, +got:\n%s", queue.AnnotationCreated, d)
		}
		e.update(ctx, t, ns, "mine", func(q *armadav1.Queue) { meta.SetExternalName(q, "theirs") })
		e.waitFor(ctx, t, ns, "mine", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileError,
			"observe failed: this Queue created queue mine in Armada and now names queue theirs (crossplane.io/external-name): "+
				"a Queue's queue name cannot change"))
		if err := e.kube.Delete(ctx, newQueue(ns, "mine", armadav1.QueueParameters{})); err != nil {
			t.Fatalf("cannot delete Queue: %v", err)
		}
		e.waitFor(ctx, t, ns, "mine", gone)
		got, ok := s.Queue("theirs")
		if d := cmp.Diff(theirs, got); !ok || d != "" {
			t.Errorf("Armada's queue theirs after another Queue was renamed to it and deleted (found %t): -before, +after:\n%s", ok, d)
		}
		if _, ok := s.Queue("mine"); ok {
			t.Error("Armada still has queue mine after the Queue that created it was deleted")
		}
	})

	t.Run("OrphanWithoutDeletePolicy", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		q := newQueue(ns, "kept", armadav1.QueueParameters{PriorityFactor: "1"})
		q.Spec.ManagementPolicies = xpv2.ManagementPolicies{
			xpv2.ManagementActionObserve, xpv2.ManagementActionCreate,
			xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize,
		}
		e.create(ctx, t, q)
		q = e.waitFor(ctx, t, ns, "kept", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		if err := e.kube.Delete(ctx, q); err != nil {
			t.Fatalf("cannot delete Queue: %v", err)
		}
		e.waitFor(ctx, t, ns, "kept", gone)
		if _, ok := s.Queue("kept"); !ok {
			t.Error("Armada's queue was deleted although the management policies omit Delete")
		}
	})

	t.Run("ClusterProviderConfigAndExternalName", func(t *testing.T) {
		s := startArmada(ctx, t)
		ns := e.namespace(ctx, t, s.Address(), adminUser, adminPassword)
		e.create(ctx, t, &armadav1.ClusterProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Name: ns},
			Spec:       providerConfigSpec(s.Address(), ns),
		})
		q := newQueue(ns, "object-name", armadav1.QueueParameters{PriorityFactor: "1", UserOwners: []string{"alice"}})
		q.SetAnnotations(map[string]string{"crossplane.io/external-name": "Armada_Name.1"})
		q.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: armadav1.ClusterProviderConfigKind, Name: ns}
		e.create(ctx, t, q)
		e.waitFor(ctx, t, ns, "object-name", conditions(xpv2.ReasonAvailable, xpv2.ReasonReconcileSuccess, ""))
		if _, ok := s.Queue("Armada_Name.1"); !ok {
			t.Errorf("Armada has no queue named after the external name; it has %v", s.QueueNames())
		}
		// The ClusterProviderConfig counts its user.
		poll.Until(t, "ClusterProviderConfig "+ns+" to count 1 user", func() (bool, string) {
			cpc := &armadav1.ClusterProviderConfig{}
			if err := e.kube.Get(ctx, clientKey("", ns), cpc); err != nil {
				t.Fatal(err)
			}
			return cpc.Status.Users == 1, fmt.Sprintf("%d users", cpc.Status.Users)
		})
	})
}
