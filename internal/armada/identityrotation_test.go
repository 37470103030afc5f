package armada

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestIdentityRotation rotates remote executor a's identity
// (spec.rotation.passwords[internal-executor-a]) through its steps, each
// render observing the last one's objects healthy: the new token Secret
// is composed beside the old one, whose Objects become deletable; once
// the new token has arrived the scheduler accepts both users and the
// executor switches; once the executor runs on the new identity the old
// one is dropped (which deletes its token in the worker). Only executor
// a and the scheduler roll; executor g and every other pod do not.
func TestIdentityRotation(t *testing.T) {
	base := remoteSpec()
	rotatedSpec := *base.DeepCopy()
	rotatedSpec.Rotation = &v1alpha1.Rotation{Passwords: map[string]int32{userExecutor + "-a": 1}}
	step := func(s v1alpha1.ArmadaSpec, seen map[string]*unstructured.Unstructured) *Output {
		t.Helper()
		o := Observed{}
		if seen != nil {
			o = Observe(seen)
		}
		o.Jobs = migrated(t, s)
		return render(t, s, o)
	}
	healthy := func(out *Output) map[string]*unstructured.Unstructured { return seenAll(t, out, true) }
	identities := func(out *Output) []string {
		var keys []string
		for _, o := range out.Objects {
			if strings.HasPrefix(o.Key, "executor-a-identity") && !strings.HasSuffix(o.Key, "-serviceaccount") {
				keys = append(keys, o.Key)
			}
		}
		return keys
	}
	// secrets are the Secrets executor a's pods read env from.
	secrets := func(out *Output) []string {
		o := Observe(healthy(out))
		return o.RemoteSecrets["executor-a"]
	}
	rolled := func(a, b *Output) []string {
		var out []string
		ta, tb := podTemplates(a), podTemplates(b)
		for _, k := range slices.Sorted(maps.Keys(ta)) {
			if !cmp.Equal(ta[k], tb[k]) {
				out = append(out, k)
			}
		}
		// Remote workloads are Objects: compare their manifests.
		for _, o := range a.Objects {
			if u, ok := o.Object.(*unstructured.Unstructured); ok && strings.HasSuffix(o.Key, keyWorkloadSuffix) {
				if ob := find(b, o.Key); ob == nil || !cmp.Equal(u.Object["spec"], ob.Object.(*unstructured.Unstructured).Object["spec"]) {
					out = append(out, o.Key)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	policies := func(out *Output, key string) any {
		o := find(out, key)
		if o == nil {
			return "absent"
		}
		p, _, _ := unstructured.NestedFieldNoCopy(o.Object.(*unstructured.Unstructured).Object, "spec", "managementPolicies")
		return p
	}
	in, _ := New(claimed(base))
	oldSecret, newSecret := in.object("executor-a-identity"), in.object("executor-a-identity")+"-r1"

	// Settled: a config change reaches the pod template a render after
	// its Secret is observed.
	steady := step(base, nil)
	for range 3 {
		steady = step(base, healthy(steady))
	}
	if diff := cmp.Diff([]string{"executor-a-identity"}, identities(steady)); diff != "" {
		t.Fatalf("before the rotation (-want +got):\n%s", diff)
	}

	// 1. The new identity beside the old; the old one now deletable. Its
	// ServiceAccount comes first, its token Secret once that exists.
	s0 := step(rotatedSpec, healthy(steady))
	if find(s0, "executor-a-identity-r1-serviceaccount") == nil {
		t.Errorf("step 1: the new identity's ServiceAccount is not composed")
	}
	if diff := cmp.Diff([]string{"executor-a-identity"}, identities(s0)); diff != "" {
		t.Errorf("step 1: the new token Secret before its ServiceAccount exists (-want +got):\n%s", diff)
	}
	s1 := step(rotatedSpec, healthy(s0))
	if diff := cmp.Diff([]string{"executor-a-identity", "executor-a-identity-r1"}, identities(s1)); diff != "" {
		t.Errorf("step 1: identities (-want +got):\n%s", diff)
	}
	if p := policies(s1, "executor-a-identity"); p != nil {
		t.Errorf("step 1: the retiring identity's Object has managementPolicies %v, want none (all: dropping it deletes the token)", p)
	}
	if diff := cmp.Diff([]string(nil), rolled(steady, s1)); diff != "" {
		t.Errorf("step 1: nothing rolls before the new token arrived (-want +got):\n%s", diff)
	}

	// 2. The new token arrived: the scheduler accepts both, the executor
	// moves.
	s2 := step(rotatedSpec, healthy(s1))
	if diff := cmp.Diff([]string{newSecret}, secrets(s2)); diff != "" {
		t.Errorf("step 2: executor a reads (-want +got):\n%s", diff)
	}
	users := schedulerUsers(t, s2)
	for _, u := range []string{userExecutor + "-a", userExecutor + "-a-r1"} {
		if !slices.Contains(users, u) {
			t.Errorf("step 2: the scheduler does not accept %s during the overlap: %v", u, users)
		}
	}
	if diff := cmp.Diff([]string{"executor-a-workload", "scheduler-workload"}, rolled(s1, s2)); diff != "" {
		t.Errorf("step 2: rolled (-want +got):\n%s", diff)
	}

	// Not rolled yet: the executor's Object still composes the old
	// identity. The old one stays.
	waiting := healthy(s1)
	for k, v := range healthy(s2) {
		if k != "executor-a-workload" {
			waiting[k] = v
		}
	}
	if diff := cmp.Diff([]string{"executor-a-identity", "executor-a-identity-r1"}, identities(step(rotatedSpec, waiting))); diff != "" {
		t.Errorf("the old identity was dropped before the executor ran on the new one (-want +got):\n%s", diff)
	}

	// 3. The executor runs on the new identity: the old one goes.
	s3 := step(rotatedSpec, healthy(s2))
	if diff := cmp.Diff([]string{"executor-a-identity-r1"}, identities(s3)); diff != "" {
		t.Errorf("step 3: identities (-want +got):\n%s", diff)
	}
	users = schedulerUsers(t, s3)
	if slices.Contains(users, userExecutor+"-a") || !slices.Contains(users, userExecutor+"-a-r1") {
		t.Errorf("step 3: the scheduler accepts %v, want the new identity and not the old", users)
	}
	if diff := cmp.Diff([]string{"scheduler-workload"}, rolled(s2, s3)); diff != "" {
		t.Errorf("step 3: rolled (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{newSecret}, secrets(s3)); diff != "" || slices.Contains(secrets(s3), oldSecret) {
		t.Errorf("step 3: executor a reads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(identities(s3), identities(step(rotatedSpec, healthy(s3)))); diff != "" {
		t.Errorf("after the rotation the next render changed the identities (-want +got):\n%s", diff)
	}

	// Going back is refused naming the field.
	in, _ = New(claimed(base))
	o := Observe(healthy(s3))
	o.Jobs = migrated(t, base)
	if _, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("test"), "xr")}); err == nil || !strings.HasPrefix(err.Error(), "spec.rotation.passwords.internal-executor-a:") {
		t.Errorf("a lower identity generation: want a refusal naming spec.rotation.passwords.internal-executor-a, got %v", err)
	}
}

// schedulerUsers are the basic-auth users of the scheduler's config.
func schedulerUsers(t *testing.T, out *Output) []string {
	t.Helper()
	cfg := config(t, out, "scheduler-config")
	users, _, _ := unstructured.NestedMap(cfg, "auth", "basicAuth", "users")
	return slices.Sorted(maps.Keys(users))
}
