package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultPriorityClassNames are the PriorityClass names a new Armada gets
// when its spec names none, as docs/guides/teams.md documents them:
// <namespace>-<name>-<6 hex digits of sha256("<namespace>/<name>")>-default
// and -preemptible.
func defaultPriorityClassNames(ns, name string) []string {
	sum := sha256.Sum256([]byte(ns + "/" + name))
	prefix := fmt.Sprintf("%s-%s-%x-", ns, name, sum[:3])
	return []string{prefix + "default", prefix + "preemptible"}
}

// TestTeams: three teams' default claims (examples/team-a.yaml and
// team-b.yaml as written, and the minimal example, the README's claim, in
// namespace team-c) beside the minimal example in its own namespace all
// compose and, with health simulated, become Ready, each with
// PriorityClasses of its own. Deleting team b's claim leaves every other
// Armada's objects as they were. Every refusal is readable on the team's
// claim, as Accepted=False with reason Refused and the field named, until
// the claim is fixed: a priority class another Armada owns, an invalid
// spec the schema lets through, and a backing-service mode switch the
// schema cannot see; a mode switch the schema can see is refused at apply.
func TestTeams(t *testing.T) {
	parallel(t)
	claims := []*unstructured.Unstructured{
		applyExample(t, "minimal", "armada"),
		applyExample(t, "team-a", "team-a"),
		applyExample(t, "team-b", "team-b"),
		applyExample(t, "minimal", "team-c"),
	}
	example, teamA, teamB, teamC := claims[0], claims[1], claims[2], claims[3]
	for _, c := range claims {
		claimCondition(t, c, "Synced", "True")
	}
	convergeAll(t, claims...)
	owner := map[string]string{}
	for _, c := range claims {
		claimAccepted(t, c, "True")
		want := defaultPriorityClassNames(c.GetNamespace(), c.GetName())
		got, _, _ := unstructured.NestedStringSlice(get(t, claimAPIVersion, "ArmadaClaim", c.GetNamespace(), c.GetName()).Object,
			"status", "scheduling", "priorityClasses")
		if !slices.Equal(got, want) {
			t.Errorf("claim %s status.scheduling.priorityClasses = %q, want %q", c.GetNamespace(), got, want)
		}
		for _, name := range want {
			pc := &schedulingv1.PriorityClass{}
			if err := kube().Get(context.Background(), client.ObjectKey{Name: name}, pc); err != nil {
				t.Errorf("PriorityClass %s of %s: %v", name, c.GetNamespace(), err)
				continue
			}
			if ns := pc.Labels["crossplane.io/claim-namespace"]; ns != c.GetNamespace() {
				t.Errorf("PriorityClass %s belongs to the claim in %q, want %q", name, ns, c.GetNamespace())
			}
			if o, ok := owner[name]; ok {
				t.Errorf("PriorityClass %s is both %s's and %s's", name, o, c.GetNamespace())
			}
			owner[name] = c.GetNamespace()
		}
	}
	teamADefault := defaultPriorityClassNames(teamA.GetNamespace(), teamA.GetName())[0]

	t.Run("DeleteOneTeam", func(t *testing.T) {
		others := []*unstructured.Unstructured{example, teamA, teamC}
		before := settled(t, others...)
		_, refs := composed(t, teamB)
		if err := kube().Delete(context.Background(), teamB); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "team b's composed objects deleted", func() (bool, string) {
			left := 0
			for _, r := range refs {
				if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) != nil {
					left++
				}
			}
			return left == 0, fmt.Sprintf("%d of %d left", left, len(refs))
		})
		time.Sleep(3 * time.Second) // let any stray update land
		unchanged(t, before, snapshot(t, others...))
		t.Logf("team b's %d objects deleted; the other Armadas' %d objects (%d PriorityClasses) unchanged",
			len(refs), len(before), len(owner)-2)
	})

	t.Run("ConflictingPriorityClass", func(t *testing.T) {
		before := settled(t, teamA, teamC)
		if err := updateClaim(t, teamC, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{"name": teamADefault, "priority": int64(1000)}},
				"spec", "scheduling", "priorityClasses")
		}); err != nil {
			t.Fatal(err)
		}
		msg := claimAccepted(t, teamC, "False", "spec.scheduling.priorityClasses[0].name", teamADefault, "already belongs to")
		t.Logf("on team c's claim: %s", msg)
		time.Sleep(3 * time.Second)
		unchanged(t, before, snapshot(t, teamA, teamC))
		fixed(t, teamC, func(c *unstructured.Unstructured) { unstructured.RemoveNestedField(c.Object, "spec", "scheduling") })
	})

	t.Run("InvalidSpec", func(t *testing.T) {
		// A limit for a class this Armada does not have, here the legacy
		// name a new claim no longer gets: the schema cannot know the
		// Armada's class names.
		if err := updateClaim(t, teamC, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{
				"name": "research", "priorityFactor": "1",
				"resourceLimitsByPriorityClassName": map[string]any{
					"armada-default": map[string]any{"maximumResourceFraction": map[string]any{"cpu": "0.5"}},
				},
			}}, "spec", "queues")
		}); err != nil {
			t.Fatalf("the schema refused what only the function can check: %v", err)
		}
		msg := claimAccepted(t, teamC, "False", "spec.queues[0].resourceLimitsByPriorityClassName[armada-default]")
		t.Logf("on team c's claim: %s", msg)
		fixed(t, teamC, func(c *unstructured.Unstructured) { unstructured.RemoveNestedField(c.Object, "spec", "queues") })
	})

	t.Run("ModeSwitch", func(t *testing.T) {
		// The schema's transition rule sees a changed mode: refused at apply.
		err := updateClaim(t, teamA, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(c.Object, map[string]any{
				"mode": "External", "host": "pg.example", "user": "armada",
				"passwordSecretRef": map[string]any{"name": "pg", "key": "password"},
			}, "spec", "postgres")
		})
		if err == nil || !strings.Contains(err.Error(), "spec.postgres.mode cannot change on a live Armada") {
			t.Errorf("switching team a's spec.postgres.mode: got %v, want the schema's refusal", err)
		}

		// External Postgres whose databases provider-sql creates, then
		// without the admin Secret: the same mode field, so only the
		// function sees the switch.
		admin := map[string]any{"name": "armada-postgres-admin"}
		if err := updateClaim(t, teamC, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(c.Object, admin, "spec", "postgres", "adminSecretRef")
		}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "provider-sql Databases composed for team c", func() (bool, string) {
			_, refs := composed(t, teamC)
			dbs, exist := byKind(refs, "Database"), 0
			for _, r := range dbs {
				if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) != nil {
					exist++
				}
			}
			return len(dbs) > 0 && exist == len(dbs), fmt.Sprintf("%d of %d Databases exist", exist, len(dbs))
		})
		claimAccepted(t, teamC, "True")
		before := settled(t, teamC)
		if err := updateClaim(t, teamC, func(c *unstructured.Unstructured) {
			unstructured.RemoveNestedField(c.Object, "spec", "postgres", "adminSecretRef")
		}); err != nil {
			t.Fatal(err)
		}
		msg := claimAccepted(t, teamC, "False", "spec.postgres.mode", "spec.postgres.allowModeChange")
		t.Logf("on team c's claim: %s", msg)
		time.Sleep(3 * time.Second)
		unchanged(t, before, snapshot(t, teamC))
		fixed(t, teamC, func(c *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(c.Object, admin, "spec", "postgres", "adminSecretRef")
		})
	})
}

// fixed applies a fix to a refused claim and waits until the claim reports
// Accepted=True again.
func fixed(t *testing.T, claim *unstructured.Unstructured, fix func(*unstructured.Unstructured)) {
	t.Helper()
	if err := updateClaim(t, claim, fix); err != nil {
		t.Fatal(err)
	}
	claimAccepted(t, claim, "True")
}

// TestManyTeams is a load run, reported rather than timed: 20 teams each
// apply the minimal claim in their own namespace at once, beside nothing
// else of theirs. Every claim must be composed (its XR Synced with resource
// references, every referenced object existing) with PriorityClasses of
// its own. It reports the time from the first apply until all are
// composed, the function calls it took, and function-armada's resident
// memory.
func TestManyTeams(t *testing.T) {
	const teams = 20
	ctx := context.Background()
	rssBefore, _ := functionMemory(t)
	claims := make([]*unstructured.Unstructured, 0, teams)
	var docs []*unstructured.Unstructured
	for i := range teams {
		ns := fmt.Sprintf("e2e-load-%02d", i)
		namespace(t, ns)
		d := exampleDocs(t, "minimal", ns)
		claims = append(claims, claimOf(t, d))
		docs = append(docs, d...)
	}
	t.Cleanup(func() {
		start := time.Now()
		for _, c := range claims {
			_ = kube().Delete(ctx, c)
		}
		waitWithin(t, 5*time.Minute, "the load claims' PriorityClasses collected", func() (bool, string) {
			pcs := &schedulingv1.PriorityClassList{}
			if err := kube().List(ctx, pcs); err != nil {
				return false, err.Error()
			}
			left := 0
			for _, pc := range pcs.Items {
				if strings.HasPrefix(pc.Labels["crossplane.io/claim-namespace"], "e2e-load-") {
					left++
				}
			}
			return left == 0, fmt.Sprintf("%d left", left)
		})
		t.Logf("20 claims deleted and their PriorityClasses collected in %s", time.Since(start).Round(time.Millisecond))
	})

	calls, start := functionCalls(t), time.Now()
	apply(t, docs...)
	applied := time.Since(start)
	peak := rssBefore
	d := waitWithin(t, 5*time.Minute, "every load claim composed", func() (bool, string) {
		if rss, _ := functionMemory(t); rss > peak {
			peak = rss
		}
		done := 0
		for _, c := range claims {
			cl := get(t, claimAPIVersion, "ArmadaClaim", c.GetNamespace(), c.GetName())
			name, _, _ := unstructured.NestedString(cl.Object, "spec", "resourceRef", "name")
			if name == "" {
				continue
			}
			xr := get(t, claimAPIVersion, "XArmada", "", name)
			if xr == nil {
				continue
			}
			refs, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
			// Composed: Synced, and what lives in the job namespace, which
			// follows the namespace by one reconcile, there too.
			if s, _, _ := condition(xr, "Synced"); s == "True" && len(refs) > 0 &&
				get(t, "v1", "ServiceAccount", c.GetNamespace()+"-jobs", "default") != nil {
				done++
			}
		}
		return done == teams, fmt.Sprintf("%d of %d composed", done, teams)
	})
	n := functionCalls(t) - calls
	rssAfter, hwm := functionMemory(t)

	objects, names := 0, map[string]string{}
	for _, c := range claims {
		_, refs := composed(t, c)
		objects += len(refs)
		for _, r := range refs {
			if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
				t.Errorf("%s of %s is referenced but does not exist", r, c.GetNamespace())
			}
		}
		pcs := byKind(refs, "PriorityClass")
		if len(pcs) != 2 {
			t.Errorf("%s composes %d PriorityClasses, want its 2", c.GetNamespace(), len(pcs))
		}
		for _, pc := range pcs {
			if o, ok := names[pc.Name]; ok {
				t.Errorf("PriorityClass %s composed by %s and %s", pc.Name, o, c.GetNamespace())
			}
			names[pc.Name] = c.GetNamespace()
		}
	}
	t.Logf("load: %d claims applied in %s; all composed %s after the first apply (%d objects, %d function calls)",
		teams, applied.Round(time.Millisecond), (applied + d).Round(time.Millisecond), objects, n)
	t.Logf("load: function-armada resident memory (VmRSS, sampled every 250 ms) %d MiB before, %d MiB peak sampled, %d MiB after; "+
		"peak since its start (VmHWM) %d MiB", rssBefore>>20, peak>>20, rssAfter>>20, hwm>>20)
}
