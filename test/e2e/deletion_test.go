package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

// deletionBound is how long a claim with queues on it, a team's queue
// among them, may take to be deleted with every composed object, its
// Queues and provider-armada's ProviderConfig: provider-armada's release
// period. Reaching Armada is what the period bounds; here the server stops
// answering as soon as its Deployment or Service is being deleted.
const deletionBound = queue.DefaultReleaseAfter

// TestDeleteWithQueues deletes an Armada with a platform queue and another
// team's queue on it, with provider-armada running, under each
// deletionPolicy. The in-memory Armada stands in for the server, which
// does not run here: it answers only while the composed server Deployment
// and Service exist and are not being deleted, as a real server stops
// answering once its pods go. Every composed object, the platform's Queue
// and the ProviderConfig go within deletionBound; the team's Queue stays
// (its claim is not deleted) reporting the missing config, and goes within
// the bound once the team deletes its claim. Under Orphan both queues stay
// in Armada.
func TestDeleteWithQueues(t *testing.T) {
	parallel(t)
	for _, policy := range []string{"Delete", "Orphan"} {
		t.Run(policy, func(t *testing.T) { testDeleteWithQueues(t, policy) })
	}
}

func testDeleteWithQueues(t *testing.T, policy string) {
	t.Helper()
	ns, teamNS := "e2e-del-"+strings.ToLower(policy), "team-del-"+strings.ToLower(policy)
	claim := install(t, "minimal", ns, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, policy, "spec", "deletionPolicy")
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"name": "research", "priorityFactor": "1", "groupOwners": []any{"researchers"}},
		}, "spec", "queues")
	})
	name := claim.GetName()
	armada, serverAddr := armadaAsComposed(t, claim)
	ctx := t.Context()
	runProvider(ctx, t, ns, func(ctx context.Context, addr string) (net.Conn, error) {
		if addr != serverAddr {
			return nil, errors.Errorf("unexpected Armada address %s, want the composed server %s", addr, serverAddr)
		}
		if why := serverGone(ctx, ns, name+"-server"); why != "" {
			return nil, errors.Errorf("dial tcp %s: connection refused (%s)", addr, why)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", armada.Address())
	})

	team := teamQueueClaim(ns, teamNS, name)
	namespace(t, teamNS)
	tenancyPolicy(t, teamNS, map[string]any{"queueArmadas": []any{map[string]any{"namespace": ns, "name": name}}})
	apply(t, team)
	t.Cleanup(func() { _ = kube().Delete(context.Background(), team) })
	for _, q := range []string{"research", "ml"} {
		waitFor(t, "queue "+q+" in Armada", func() (bool, string) {
			_, ok := armada.Queue(q)
			return ok, fmt.Sprintf("queues in Armada: %v; Queue objects: %s", armada.QueueNames(), queueStates(t, ns))
		})
	}
	_, refs := composed(t, claim)
	pc := ref{armadav1.SchemeGroupVersion.String(), armadav1.ProviderConfigKind, ns, name + "-armada"}
	platformQueue := ref{armadav1.SchemeGroupVersion.String(), armadav1.QueueKind, ns, name + "-queue-research"}
	teamQueue := ref{armadav1.SchemeGroupVersion.String(), armadav1.QueueKind, ns, name + "-queue-ml"}
	if get(t, teamQueue.APIVersion, teamQueue.Kind, ns, teamQueue.Name) == nil {
		t.Fatalf("no team Queue %s; Queue objects: %s", teamQueue, queueStates(t, ns))
	}

	// The platform's Queue carries the claim's policy: under Orphan no
	// Delete, so provider-armada never deletes its queue in Armada.
	pq := get(t, platformQueue.APIVersion, platformQueue.Kind, ns, platformQueue.Name)
	policies, _, _ := unstructured.NestedStringSlice(pq.Object, "spec", "managementPolicies")
	if deletes := len(policies) == 0 || slices.Contains(policies, "Delete") || slices.Contains(policies, "*"); deletes != (policy == "Delete") {
		t.Errorf("deletionPolicy %s: the platform Queue's managementPolicies %v (deletes in Armada: %t)", policy, policies, deletes)
	}
	if err := kube().Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	want := refs
	for _, r := range []ref{pc, platformQueue} {
		if !slices.Contains(want, r) {
			t.Fatalf("%s is not among the claim's composed objects: %v", r, refs)
		}
	}
	d := waitWithin(t, deletionBound, "every composed object (the Queue and the ProviderConfig among them) deleted", func() (bool, string) {
		var left []string
		for _, r := range want {
			if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) != nil {
				left = append(left, r.String())
			}
		}
		return len(left) == 0, fmt.Sprintf("%d of %d left: %v; Queue objects: %s", len(left), len(want), left, queueStates(t, ns))
	})
	t.Logf("deletionPolicy %s: %d composed objects, the Queue and the ProviderConfig among them, deleted %s after the claim (bound %s)",
		policy, len(refs), d.Round(time.Millisecond), deletionBound)

	// The team's claim is not deleted: its Queue stays and says why.
	waitFor(t, "the team's Queue reporting its missing ProviderConfig", func() (bool, string) {
		q := get(t, teamQueue.APIVersion, teamQueue.Kind, ns, teamQueue.Name)
		if q == nil {
			return false, "the team's Queue is gone with the Armada, although its claim is not deleted"
		}
		s, r, m := condition(q, "Synced")
		return s == "False" && strings.Contains(m, "cannot get ProviderConfig"), fmt.Sprintf("Synced=%s %s: %s", s, r, m)
	})
	if err := kube().Delete(ctx, team); err != nil {
		t.Fatal(err)
	}
	d = waitWithin(t, deletionBound, "the team's Queue deleted with its claim", func() (bool, string) {
		return get(t, teamQueue.APIVersion, teamQueue.Kind, ns, teamQueue.Name) == nil, queueStates(t, ns)
	})
	t.Logf("the team's Queue deleted %s after its claim", d.Round(time.Millisecond))

	_, research := armada.Queue("research")
	_, ml := armada.Queue("ml")
	switch policy {
	case "Orphan":
		if !research || !ml {
			t.Errorf("deletionPolicy Orphan: Armada kept research %t, ml %t; want both kept", research, ml)
		}
	default:
		// The server stops answering once deleting; whether the platform
		// queue was deleted in it first is a race the database settles:
		// under Delete it goes with the server's database.
		t.Logf("deletionPolicy Delete: queue research deleted in Armada before it stopped answering: %t", !research)
	}
}

// serverGone says why the server at name in ns no longer answers: its
// Deployment or Service is gone or being deleted. Empty while both exist.
func serverGone(ctx context.Context, ns, name string) string {
	for _, kind := range []string{"Deployment", "Service"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(map[string]string{"Deployment": "apps/v1", "Service": "v1"}[kind])
		u.SetKind(kind)
		err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		switch {
		case kerrors.IsNotFound(err):
			return kind + " " + name + " is gone"
		case err != nil:
			return err.Error()
		case u.GetDeletionTimestamp() != nil:
			return kind + " " + name + " is being deleted"
		}
	}
	return ""
}
