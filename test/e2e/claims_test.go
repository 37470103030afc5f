package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// uids maps each composed object of an XR (and the XR itself) to its UID:
// what must not change while a tenant tries to take it.
func uids(t *testing.T, xr *unstructured.Unstructured) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{"XR": xr.GetUID()}
	raw, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	for _, r := range raw {
		m, _ := r.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		if o := get(t, s("apiVersion"), s("kind"), s("namespace"), s("name")); o != nil {
			out[s("kind")+" "+s("namespace")+"/"+s("name")] = o.GetUID()
		}
	}
	return out
}

// refused checks err is the API server's refusal of a write, naming every
// one of parts.
// updateRefused updates kind ns/name through c after mutate, as often as
// Crossplane's own writes conflict, and expects the refusal naming parts.
func updateRefused(t *testing.T, c client.Client, what, kind, ns, name string, mutate func(*unstructured.Unstructured), parts ...string) {
	t.Helper()
	for {
		u := get(t, claimAPIVersion, kind, ns, name)
		mutate(u)
		if err := c.Update(context.Background(), u); !kerrors.IsConflict(err) {
			refused(t, what, err, parts...)
			return
		}
	}
}

func refused(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted, want refused naming %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: refused with %q, want it to name %q", what, err, p)
		}
	}
	if !kerrors.IsForbidden(err) && !kerrors.IsInvalid(err) {
		t.Fatalf("%s: %v, want Forbidden or Invalid", what, err)
	}
	t.Logf("%s refused: %v", what, err)
}

// TestClaimCannotBindPlatformXR (issue 44, attack 3): the platform's
// XArmada, made without a claim, cannot be bound by a tenant's ArmadaClaim
// naming it in spec.resourceRef, neither at create nor by an update; the
// refusal names the field. The XR keeps its UID, its composed objects and
// Accepted=True, and has no claimRef; deleting the tenant's claim leaves
// it as it was. Crossplane itself still binds the XR it creates for a
// claim (the tenant's own claim composes).
func TestClaimCannotBindPlatformXR(t *testing.T) {
	parallel(t)
	platNS, tenantNS := "e2e-plat", "e2e-grab"
	docs := exampleDocs(t, "minimal", platNS)
	claim := claimOf(t, docs)
	namespace(t, platNS)
	userSecrets(t, claim)
	var secrets []*unstructured.Unstructured
	for _, d := range docs {
		if d.GetKind() == "Secret" {
			secrets = append(secrets, d)
		}
	}
	apply(t, secrets...)
	plat := claim.DeepCopy()
	plat.SetKind("XArmada")
	plat.SetNamespace("")
	plat.SetName("e2e-plat")
	_ = unstructured.SetNestedField(plat.Object, platNS, "spec", "namespace")
	apply(t, plat)
	t.Cleanup(func() {
		_ = kube().Delete(context.Background(), plat)
		waitFor(t, "XArmada e2e-plat and its PriorityClasses gone", func() (bool, string) {
			pcs := &schedulingv1.PriorityClassList{}
			if err := kube().List(context.Background(), pcs, client.MatchingLabels{"crossplane.io/composite": "e2e-plat"}); err != nil {
				t.Fatal(err)
			}
			return get(t, claimAPIVersion, "XArmada", "", "e2e-plat") == nil && len(pcs.Items) == 0, fmt.Sprintf("%d PriorityClasses left", len(pcs.Items))
		})
	})
	accepted(t, "XArmada", plat, "True")
	var before map[string]types.UID
	waitFor(t, "XArmada e2e-plat Synced with composed objects", func() (bool, string) {
		xr := get(t, claimAPIVersion, "XArmada", "", "e2e-plat")
		s, r, m := condition(xr, "Synced")
		before = uids(t, xr)
		return s == "True" && len(before) > 1, fmt.Sprintf("Synced=%s %s: %s; %d objects", s, r, m, len(before))
	})

	namespace(t, tenantNS)
	tenant := teamMember(t, tenantNS, "e2e-grabber")
	grab := claim.DeepCopy()
	grab.SetNamespace(tenantNS)
	grab.SetName("grab")
	_ = unstructured.SetNestedMap(grab.Object, map[string]any{"apiVersion": claimAPIVersion, "kind": "XArmada", "name": "e2e-plat"},
		"spec", "resourceRef")
	err := tenant.Create(context.Background(), grab)
	refused(t, "a tenant's ArmadaClaim naming XArmada e2e-plat in spec.resourceRef", err,
		"spec.resourceRef", "e2e-grabber may not update xarmadas e2e-plat", "remove spec.resourceRef")

	// The tenant's own claim composes (Crossplane sets its spec.resourceRef),
	// and it cannot then be pointed at the platform's XR.
	own := claim.DeepCopy()
	own.SetNamespace(tenantNS)
	own.SetName("own")
	userSecrets(t, own)
	if err := tenant.Create(context.Background(), own); err != nil {
		t.Fatalf("the tenant's own claim: %v", err)
	}
	t.Cleanup(func() { deleteClaim(t, own) })
	var ownXR string
	waitFor(t, "Crossplane binds the tenant's claim to the XR it created", func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaClaim", tenantNS, "own")
		ownXR, _, _ = unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
		return ownXR != "" && ownXR != "e2e-plat", "spec.resourceRef.name " + ownXR
	})
	updateRefused(t, tenant, "the tenant repointing its claim's spec.resourceRef at XArmada e2e-plat", "ArmadaClaim", tenantNS, "own",
		func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, "e2e-plat", "spec", "resourceRef", "name")
		}, "spec.resourceRef", "may not update xarmadas e2e-plat")

	// Deleting the tenant's claims leaves the platform's XR as it was.
	deleteClaim(t, own)
	if err := kube().Delete(context.Background(), grab); err != nil && !kerrors.IsNotFound(err) {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // let any stray update land
	xr := get(t, claimAPIVersion, "XArmada", "", "e2e-plat")
	if xr == nil || xr.GetDeletionTimestamp() != nil {
		t.Fatal("XArmada e2e-plat is gone or being deleted after the tenant's claims were deleted")
	}
	if ref, found, _ := unstructured.NestedMap(xr.Object, "spec", "claimRef"); found {
		t.Errorf("XArmada e2e-plat is bound to claim %v", ref)
	}
	accepted(t, "XArmada", plat, "True")
	after := uids(t, xr)
	for k, uid := range before {
		if after[k] != uid {
			t.Errorf("%s: UID %s, was %s", k, after[k], uid)
		}
	}
}

// TestQueueClaimRename (issue 44, attack 4): two teams' queue claims on one
// Armada. Team x cannot point its claim at team y's queue: changing
// spec.queueName, setting it where the claim's name was the default, or
// changing spec.armada is refused at apply, naming the field. Team y's
// Queue keeps its UID and owners, and deleting team x's claim deletes only
// team x's Queue.
func TestQueueClaimRename(t *testing.T) {
	parallel(t)
	armadaNS := "e2e-qrename"
	armada := applyExample(t, "minimal", armadaNS)
	claimCondition(t, armada, "Synced", "True")
	queues := map[string]*unstructured.Unstructured{}
	for team, name := range map[string]string{"e2e-qrename-x": "x", "e2e-qrename-y": "ml"} {
		namespace(t, team)
		tenancyPolicy(t, team, map[string]any{"queueArmadas": []any{map[string]any{"namespace": armadaNS, "name": armada.GetName()}}})
		q := teamQueueClaim(armadaNS, team, armada.GetName())
		q.SetName(name)
		_ = unstructured.SetNestedStringSlice(q.Object, []string{"team-" + name}, "spec", "groupOwners")
		_ = unstructured.SetNestedStringSlice(q.Object, []string{team + "-jobs"}, "spec", "namespaces")
		apply(t, q)
		t.Cleanup(func() { _ = kube().Delete(context.Background(), q) })
		queues[name] = q
	}
	// queueMR returns the team queue's Queue, once composed.
	queueMR := func(queue string) *unstructured.Unstructured {
		var mr *unstructured.Unstructured
		waitFor(t, "Queue of queue "+queue, func() (bool, string) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("armada.m.armadaproject.io/v1alpha1")
			list.SetKind("QueueList")
			if err := kube().List(context.Background(), list, client.InNamespace(armadaNS)); err != nil {
				t.Fatal(err)
			}
			var names []string
			for i := range list.Items {
				if list.Items[i].GetAnnotations()["crossplane.io/external-name"] == queue {
					mr = &list.Items[i]
					return true, ""
				}
				names = append(names, list.Items[i].GetName())
			}
			return false, fmt.Sprintf("Queues: %v", names)
		})
		return mr
	}
	for _, q := range queues {
		claimAccepted(t, q, "True")
	}
	mine, theirs := queueMR("x"), queueMR("ml")
	owners := func(mr *unstructured.Unstructured) []string {
		o, _, _ := unstructured.NestedStringSlice(mr.Object, "spec", "forProvider", "groupOwners")
		return o
	}
	theirOwners := owners(theirs)

	tenant := teamMember(t, "e2e-qrename-x", "e2e-renamer")
	// change updates team x's claim name as the tenant.
	change := func(what, name string, mutate func(*unstructured.Unstructured), parts ...string) {
		t.Helper()
		updateRefused(t, tenant, what, "ArmadaQueueClaim", "e2e-qrename-x", name, mutate, parts...)
	}
	change("setting spec.queueName to team y's queue (the claim's name was the default)", "x", func(c *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(c.Object, "ml", "spec", "queueName")
	}, "spec.queueName is immutable", "the queue is x")
	// Writing down the name it defaulted to changes nothing, and is allowed.
	for {
		c := get(t, claimAPIVersion, "ArmadaQueueClaim", "e2e-qrename-x", "x")
		_ = unstructured.SetNestedField(c.Object, "x", "spec", "queueName")
		err := tenant.Update(context.Background(), c)
		if err == nil {
			break
		}
		if !kerrors.IsConflict(err) {
			t.Fatalf("setting spec.queueName to the claim's own name: %v", err)
		}
	}
	change("changing spec.armada", "x", func(c *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(c.Object, "other", "spec", "armada", "name")
	}, "spec.armada is immutable")

	// A claim that set spec.queueName cannot change it either (the XRD's
	// rule), nor remove it so its name becomes the queue's.
	named := teamQueueClaim(armadaNS, "e2e-qrename-x", armada.GetName())
	named.SetName("named")
	_ = unstructured.SetNestedField(named.Object, "x-two", "spec", "queueName")
	_ = unstructured.SetNestedStringSlice(named.Object, []string{"team-x"}, "spec", "groupOwners")
	unstructured.RemoveNestedField(named.Object, "spec", "namespaces")
	if err := tenant.Create(context.Background(), named); err != nil {
		t.Fatalf("team x's second queue claim: %v", err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), named) })
	for what, mutate := range map[string]func(*unstructured.Unstructured){
		"changing a set spec.queueName to team y's queue": func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(c.Object, "ml", "spec", "queueName")
		},
		"removing a set spec.queueName": func(c *unstructured.Unstructured) {
			unstructured.RemoveNestedField(c.Object, "spec", "queueName")
		},
	} {
		change(what, "named", mutate, "spec.queueName is immutable")
	}

	// Team x's claim goes: its own Queue with it, team y's untouched.
	if err := kube().Delete(context.Background(), queues["x"]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "team x's Queue deleted", func() (bool, string) {
		return get(t, mine.GetAPIVersion(), mine.GetKind(), armadaNS, mine.GetName()) == nil, "still there"
	})
	time.Sleep(3 * time.Second) // let any stray update land
	now := get(t, theirs.GetAPIVersion(), theirs.GetKind(), armadaNS, theirs.GetName())
	switch {
	case now == nil || now.GetDeletionTimestamp() != nil:
		t.Fatal("team y's Queue is gone or being deleted")
	case now.GetUID() != theirs.GetUID():
		t.Errorf("team y's Queue was replaced: UID %s, was %s", now.GetUID(), theirs.GetUID())
	case fmt.Sprint(owners(now)) != fmt.Sprint(theirOwners):
		t.Errorf("team y's Queue's groupOwners %v, was %v", owners(now), theirOwners)
	case now.GetAnnotations()["crossplane.io/external-name"] != "ml":
		t.Errorf("team y's Queue names queue %q, want ml", now.GetAnnotations()["crossplane.io/external-name"])
	}
	claimAccepted(t, queues["ml"], "True")
}

// TestResourceRefsCannotAdopt: a namespaced Armada's author lists a
// PriorityClass the platform made in spec.crossplane.resourceRefs and
// names it in spec.scheduling.priorityClasses. Crossplane passes it to the
// function as composed; the function refuses the Armada (Accepted=False,
// naming spec.crossplane.resourceRefs and the PriorityClass), and the
// PriorityClass keeps its UID, labels and annotations and no owner, also
// once the Armada is deleted.
func TestResourceRefsCannotAdopt(t *testing.T) {
	parallel(t)
	ns, pcName := "e2e-adopt", "e2e-platform-high"
	pc := &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{
			Name: pcName, Labels: map[string]string{"owner": "platform"},
			// As a PriorityClass an Armada composed and left behind
			// (deletionPolicy Orphan) carries it: Crossplane observes a
			// referenced resource only with a composition resource name.
			Annotations: map[string]string{"crossplane.io/composition-resource-name": "priorityclass-" + pcName},
		},
		Value: 100000,
	}
	if err := kube().Create(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), pc) })
	scope := []any{map[string]any{"kind": "ClusterProviderConfig", "name": controlplane.ProviderConfigName}}
	tenancyPolicy(t, ns, map[string]any{"providerConfigs": map[string]any{"clusterScope": scope}})
	namespace(t, ns)
	tenant := teamMember(t, ns, "e2e-adopter")
	for _, d := range exampleDocs(t, "namespaced", ns) {
		if d.GetKind() == "Secret" {
			apply(t, d)
		}
	}
	xr := namespacedArmada(t, ns)
	_ = unstructured.SetNestedSlice(xr.Object, []any{map[string]any{"name": pcName, "priority": int64(100000)}},
		"spec", "scheduling", "priorityClasses")
	_ = unstructured.SetNestedSlice(xr.Object, []any{map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "name": pcName}},
		"spec", "crossplane", "resourceRefs")
	if err := tenant.Create(context.Background(), xr); err != nil {
		t.Fatalf("the tenant's Armada: %v", err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), xr) })
	msg := accepted(t, kindArmada, xr, "False", "spec.crossplane.resourceRefs", "PriorityClass "+pcName, "did not compose")
	t.Logf("on the tenant's Armada: %s", msg)

	check := func(when string) {
		got := &schedulingv1.PriorityClass{}
		if err := kube().Get(context.Background(), client.ObjectKey{Name: pcName}, got); err != nil {
			t.Fatalf("%s: the platform's PriorityClass: %v", when, err)
		}
		if got.UID != pc.UID || len(got.OwnerReferences) > 0 || fmt.Sprint(got.Labels) != fmt.Sprint(pc.Labels) ||
			fmt.Sprint(got.Annotations) != fmt.Sprint(pc.Annotations) {
			t.Errorf("%s: the platform's PriorityClass changed: UID %s (was %s), owners %v, labels %v, annotations %v",
				when, got.UID, pc.UID, got.OwnerReferences, got.Labels, got.Annotations)
		}
	}
	time.Sleep(3 * time.Second) // let any stray update land
	check("refused")
	if err := kube().Delete(context.Background(), xr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tenant's Armada deleted", func() (bool, string) {
		return get(t, claimAPIVersion, kindArmada, ns, xr.GetName()) == nil, "still there"
	})
	check("after the Armada's deletion")
}
