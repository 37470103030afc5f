package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTenantReach: a tenant, a user whose only rights are over claims in
// its own namespace, cannot make the function compose into, adopt or
// delete what is not its own. Each refusal class is applied as that
// tenant's claim and answered on the claim with Accepted=False naming the
// field; the other party's objects (namespace, Secret, PriorityClass:
// UIDs, resource versions and owners) are compared before and after, and
// again after the tenant deletes the offending claim:
//   - spec.namespace naming another team's namespace;
//   - an ArmadaQueueClaim listing that existing namespace, or the target
//     Armada's own (and the platform's, which the schema refuses);
//   - a PriorityClass the platform created, not this Armada;
//   - ingress.tlsSecretName naming the Secret of the Armada's private CA.
func TestTenantReach(t *testing.T) {
	parallel(t)
	const victim = "e2e-victim"
	namespace(t, victim)
	if err := kube().Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "victim-db", Namespace: victim},
		StringData: map[string]string{"password": "victim's"},
	}); err != nil {
		t.Fatal(err)
	}
	// Non-preemptible, as a claim's classes are by default: nothing
	// immutable stops Crossplane from applying over it.
	never := corev1.PreemptNever
	platformPC := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-platform-critical"}, Value: 100000, PreemptionPolicy: &never}
	if err := kube().Create(context.Background(), platformPC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), platformPC) })
	victimState := func() map[string]string { return reachState(t, victim, platformPC.Name) }
	before := victimState()
	if len(before) != 3 {
		t.Fatalf("the victim's objects: %v, want the namespace, its Secret and the PriorityClass", before)
	}

	t.Run("ClaimNamespace", func(t *testing.T) {
		claim, _ := tenantClaim(t, "e2e-tenant-ns", func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, victim, "spec", "namespace")
		})
		refusedUntouched(t, claim, before, victimState, "spec.namespace", "own namespace (e2e-tenant-ns)")
		deleteGone(t, claim)
		untouched(t, before, victimState, "claim deleted")
	})

	t.Run("QueueNamespaces", func(t *testing.T) {
		target := applyExample(t, "minimal", "e2e-reach-armada")
		claimAccepted(t, target, "True")
		const ns = "e2e-tenant-q"
		namespace(t, ns)
		// The platform's policy lets this tenant's queues attach to the
		// Armada in another namespace (TestTenancyPolicy/QueueTarget), and
		// name the victim's and the Armada's namespaces as job namespaces
		// (TestJobNamespaceGuards/NameRefused), so what is refused below is
		// that they exist and are not the queue's.
		tenancyPolicy(t, ns, map[string]any{
			"queueArmadas":  []any{map[string]any{"namespace": target.GetNamespace(), "name": target.GetName()}},
			"jobNamespaces": map[string]any{"names": []any{"{namespace}-*", victim, target.GetNamespace()}},
		})
		member := tenant(t, ns)
		queue := teamQueueClaim(target.GetNamespace(), ns, target.GetName())
		_ = unstructured.SetNestedStringSlice(queue.Object, []string{victim}, "spec", "namespaces")
		if err := member.Create(context.Background(), queue); err != nil {
			t.Fatalf("the tenant cannot create its queue claim: %v", err)
		}
		t.Cleanup(func() { _ = kube().Delete(context.Background(), queue) })
		refusedUntouched(t, queue, before, victimState, "spec.namespaces[0]", "namespace "+victim+" already exists and was not created by this queue")

		// The Armada's own namespace is refused too, and the platform's by
		// the schema.
		armadaNS := func() map[string]string { return namespaceState(t, target.GetNamespace()) }
		own := armadaNS()
		setNamespaces(t, member, queue, target.GetNamespace())
		refusedUntouched(t, queue, own, armadaNS, "spec.namespaces[0]", "is Armada "+target.GetNamespace()+"/"+target.GetName()+"'s own")
		if err := updateAs(t, member, queue, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringSlice(c.Object, []string{"kube-system"}, "spec", "namespaces")
		}); err == nil || !strings.Contains(err.Error(), "cannot name the platform's namespaces") {
			t.Errorf("listing kube-system: got %v, want the schema's refusal", err)
		} else {
			t.Logf("listing kube-system, the schema: %v", err)
		}

		// A namespace that does not exist is composed, with this queue's
		// mark, and deleted with it.
		jobs := ns + "-jobs"
		setNamespaces(t, member, queue, jobs)
		claimAccepted(t, queue, "True")
		waitFor(t, "the job namespace composed with the queue's mark", func() (bool, string) {
			n := get(t, "v1", "Namespace", "", jobs)
			if n == nil {
				return false, "no namespace " + jobs
			}
			mark := n.GetAnnotations()["armadaproject.io/owner"]
			return mark == "ArmadaQueueClaim "+ns+"/ml", "mark " + mark
		})
		deleteGone(t, queue)
		waitFor(t, "the queue's own job namespace deleted with it", func() (bool, string) {
			n := get(t, "v1", "Namespace", "", jobs)
			return n == nil || n.GetDeletionTimestamp() != nil, "namespace " + jobs + " still there"
		})
		untouched(t, before, victimState, "queue claim deleted")
		untouched(t, own, armadaNS, "queue claim deleted")
	})

	t.Run("PriorityClass", func(t *testing.T) {
		claim, _ := tenantClaim(t, "e2e-tenant-pc", func(c *unstructured.Unstructured) {
			// The platform class's very value and preemption, so nothing
			// but ownership stops Crossplane from adopting it.
			_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{"name": platformPC.Name, "priority": int64(platformPC.Value)}},
				"spec", "scheduling", "priorityClasses")
		})
		refusedUntouched(t, claim, before, victimState, "spec.scheduling.priorityClasses[0].name", "already exists and was not created by this Armada")
		deleteGone(t, claim)
		untouched(t, before, victimState, "claim deleted")
	})

	t.Run("ComposedSecret", func(t *testing.T) {
		claim, member := tenantClaim(t, "e2e-tenant-tls", nil)
		claimAccepted(t, claim, "True")
		ca := claim.GetName() + "-tls"
		waitFor(t, "the private CA's Secret composed", func() (bool, string) {
			return get(t, "v1", "Secret", claim.GetNamespace(), ca) != nil, "no Secret " + ca
		})
		tenantState := func() map[string]string { return reachState(t, claim.GetNamespace()) }
		own := settledState(t, tenantState)
		if err := updateAs(t, member, claim, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(c.Object, map[string]any{
				"grpcHost": "grpc.example.com", "restHost": "rest.example.com", "lookoutHost": "lookout.example.com", "tlsSecretName": ca,
			}, "spec", "ingress")
		}); err != nil {
			t.Fatal(err)
		}
		refusedUntouched(t, claim, own, tenantState, "spec.ingress.tlsSecretName", "names the Secret the function composes")
	})
}

// refusedUntouched waits until the claim is refused, or the state the
// refusal guards changes (what the function did before it refused), then
// lets any stray update land and reports both: the claim must be refused
// (Accepted=False, reason Refused, a message containing every one of
// parts) and state must equal before.
func refusedUntouched(t *testing.T, claim *unstructured.Unstructured, before map[string]string, state func() map[string]string, parts ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("claim %s/%s refused, or what it must not reach changed", claim.GetNamespace(), claim.GetName()), func() (bool, string) {
		s, r, m := condition(get(t, claim.GetAPIVersion(), claim.GetKind(), claim.GetNamespace(), claim.GetName()), "Accepted")
		if s == "False" && r == "Refused" {
			return true, ""
		}
		return !maps.Equal(before, state()), fmt.Sprintf("Accepted=%s %s: %s", s, r, m)
	})
	untouched(t, before, state, "refused")
	s, r, m := condition(get(t, claim.GetAPIVersion(), claim.GetKind(), claim.GetNamespace(), claim.GetName()), "Accepted")
	ok := s == "False" && r == "Refused"
	for _, p := range parts {
		ok = ok && strings.Contains(m, p)
	}
	if !ok {
		t.Errorf("claim %s/%s: Accepted=%s %s: %q; want a refusal naming %q", claim.GetNamespace(), claim.GetName(), s, r, m, parts)
		return
	}
	t.Logf("on the tenant's %s: %s", claim.GetKind(), m)
}

// untouched lets any stray update land, then reports every object of
// state that changed since before.
func untouched(t *testing.T, before map[string]string, state func() map[string]string, when string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	after := state()
	unchanged(t, before, after)
	t.Logf("%s: %d objects compared", when, len(after))
}

// settledState waits until state holds still for a few seconds (nothing
// is being composed any more) and returns it.
func settledState(t *testing.T, state func() map[string]string) map[string]string {
	t.Helper()
	var last map[string]string
	waitFor(t, "the composed state to settle", func() (bool, string) {
		prev := last
		time.Sleep(3 * time.Second)
		last = state()
		return prev != nil && maps.Equal(prev, last), fmt.Sprintf("%d objects, still changing", len(last))
	})
	return last
}

// namespaceState is reachState of a namespace object alone.
func namespaceState(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if u := get(t, "v1", "Namespace", "", ns); u != nil {
		record(out, u)
	}
	return out
}

// record puts what would show a change of an object in state: its UID,
// resource version, owners and annotations.
func record(state map[string]string, u *unstructured.Unstructured) {
	state[u.GetKind()+" "+strings.TrimPrefix(u.GetNamespace()+"/"+u.GetName(), "/")] = fmt.Sprintf("uid %s resourceVersion %s owners %d annotations %v",
		u.GetUID(), u.GetResourceVersion(), len(u.GetOwnerReferences()), u.GetAnnotations())
}

// tenant is a user whose only rights are over claims in namespace ns, and
// a client impersonating them.
func tenant(t *testing.T, ns string) client.Client {
	t.Helper()
	return teamMember(t, ns, "tenant-"+ns)
}

// tenantClaim creates examples/minimal.yaml's claim, changed by mutate, in
// its own namespace ns as a tenant of ns (with the Secret it references,
// as the tenant would have created it). It deletes the claim when the test
// ends.
func tenantClaim(t *testing.T, ns string, mutate func(*unstructured.Unstructured)) (*unstructured.Unstructured, client.Client) {
	t.Helper()
	namespace(t, ns)
	member := tenant(t, ns)
	claim := claimOf(t, exampleDocs(t, "minimal", ns))
	if mutate != nil {
		mutate(claim)
	}
	userSecrets(t, claim)
	if err := member.Create(context.Background(), claim.DeepCopy()); err != nil {
		t.Fatalf("the tenant cannot create its claim: %v", err)
	}
	t.Cleanup(func() { deleteClaim(t, claim) })
	return claim, member
}

// updateAs changes a claim as c's user.
func updateAs(t *testing.T, c client.Client, claim *unstructured.Unstructured, change func(*unstructured.Unstructured)) error {
	t.Helper()
	for {
		u := get(t, claim.GetAPIVersion(), claim.GetKind(), claim.GetNamespace(), claim.GetName())
		change(u)
		err := c.Update(context.Background(), u)
		if !kerrors.IsConflict(err) {
			return err
		}
	}
}

// setNamespaces sets a queue claim's spec.namespaces as c's user.
func setNamespaces(t *testing.T, c client.Client, queue *unstructured.Unstructured, ns ...string) {
	t.Helper()
	if err := updateAs(t, c, queue, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringSlice(u.Object, ns, "spec", "namespaces")
	}); err != nil {
		t.Fatal(err)
	}
}

// deleteGone deletes a claim and waits until it and its XR are gone.
func deleteGone(t *testing.T, claim *unstructured.Unstructured) {
	t.Helper()
	c := get(t, claim.GetAPIVersion(), claim.GetKind(), claim.GetNamespace(), claim.GetName())
	if c == nil {
		t.Fatalf("claim %s/%s is gone already", claim.GetNamespace(), claim.GetName())
	}
	xrKind := "X" + strings.TrimSuffix(claim.GetKind(), "Claim")
	xrName, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
	if err := kube().Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim "+claim.GetName()+" and its XR deleted", func() (bool, string) {
		left := get(t, claim.GetAPIVersion(), claim.GetKind(), claim.GetNamespace(), claim.GetName()) != nil
		xr := xrName != "" && get(t, claimAPIVersion, xrKind, "", xrName) != nil
		return !left && !xr, fmt.Sprintf("claim left %t, XR %s left %t", left, xrName, xr)
	})
}

// reachState records the objects in namespace ns (the namespace itself,
// its Secrets, Deployments, Services and Ingresses) and the named
// PriorityClasses as what would show a change: UID, resource version and
// owners.
func reachState(t *testing.T, ns string, priorityClasses ...string) map[string]string {
	t.Helper()
	out := namespaceState(t, ns)
	add := func(u *unstructured.Unstructured) { record(out, u) }
	for _, k := range [][2]string{{"v1", "Secret"}, {"apps/v1", "Deployment"}, {"v1", "Service"}, {"networking.k8s.io/v1", "Ingress"}} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(k[0])
		l.SetKind(k[1] + "List")
		if err := kube().List(context.Background(), l, client.InNamespace(ns)); err != nil {
			t.Fatalf("cannot list %ss in %s: %v", k[1], ns, err)
		}
		for i := range l.Items {
			add(&l.Items[i])
		}
	}
	for _, name := range priorityClasses {
		if u := get(t, "scheduling.k8s.io/v1", "PriorityClass", "", name); u != nil {
			add(u)
		}
	}
	return out
}
