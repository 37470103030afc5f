package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExecutorIdentityRotation rotates a remote executor's identity on
// the local control plane with two worker clusters, under the default
// deletionPolicy Orphan: raising spec.rotation.passwords
// [internal-executor-worker-a] mints a new service-account token in
// worker-a (a new token Secret, copied to a connection Secret here), the
// executor's Deployment there moves to it (user
// internal-executor-worker-a-r1), the scheduler accepts its password, and
// then the old token Secret and ServiceAccount are deleted from the
// worker: a TokenReview there refuses the old token and accepts the new
// one. Only worker-a's executor and the scheduler roll; worker-gpu's
// executor and every other pod do not.
//
// Simulated: no kubelet or Deployment controller runs, so the test
// reports Deployments available as TestMultiCluster does, and no
// scheduler process checks the password: that the scheduler accepts the
// new identity is shown by its composed env reading the connection Secret
// that holds the new token.
func TestExecutorIdentityRotation(t *testing.T) {
	start := time.Now()
	workers := startWorkers(t, "worker-a", "worker-gpu")
	t.Logf("2 worker clusters up in %s", time.Since(start).Round(time.Millisecond))
	connectWorkers(t, workers)
	claim, _ := applyMultiCluster(t, func(*unstructured.Unstructured) {})
	a, gpu := workerOf(t, workers, "worker-a"), workerOf(t, workers, "worker-gpu")

	waitFor(t, "every remote object in its worker cluster", func() (bool, string) {
		remotes := remoteObjects(t, claim)
		markAll(t, claim, workers)
		missing := missingRemotes(t, workers, remotes)
		return len(missing) == 0 && hasEveryKind(remotes) == "", fmt.Sprintf("missing %v; %s", missing, hasEveryKind(remotes))
	})
	oldToken := identityTokens(t, claim, workers)[0]
	waitExecutors(t, claim, workers, map[string]bool{"worker-a": true, "worker-gpu": true}, "")
	settled(t, claim)
	oldName := claim.GetName() + "-executor-worker-a-identity"
	newName := oldName + "-r1"
	local := podTemplates(t, multiNS)
	gpuBefore := workerTemplate(t, gpu, claim.GetName()+"-executor-worker-gpu")
	aBefore := workerTemplate(t, a, claim.GetName()+"-executor-worker-a")

	t0 := time.Now()
	if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(c.Object, int64(1), "spec", "rotation", "passwords", "internal-executor-worker-a")
	}); err != nil {
		t.Fatal(err)
	}
	var newToken []byte
	d := waitWithin(t, faultTimeout, "the executor on the new identity and the old token Secret deleted in worker-a", func() (bool, string) {
		markAll(t, claim, workers)
		s := &corev1.Secret{}
		if err := a.kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: newName}, s); err != nil {
			return false, "new token Secret: " + err.Error()
		}
		if newToken = s.Data["token"]; len(newToken) == 0 {
			return false, "new token not filled yet"
		}
		here := &corev1.Secret{}
		if err := kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: newName}, here); err != nil || !bytes.Equal(here.Data["password"], newToken) {
			return false, fmt.Sprintf("new token not copied here yet (%v)", err)
		}
		if env := executorEnv(t, a, claim.GetName()+"-executor-worker-a"); env["ARMADA_EXECUTORAPICONNECTION_BASICAUTH_USERNAME"] != "internal-executor-worker-a-r1" ||
			env["ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD"] != newName+"/token" {
			return false, fmt.Sprintf("executor env: %v", env)
		}
		for _, r := range []ref{{"v1", "Secret", multiNS, oldName}, {"v1", "ServiceAccount", multiNS, oldName}} {
			if getIn(t, a.kube(), r) != nil {
				return false, r.String() + " still in worker-a"
			}
		}
		// And their Objects here gone, finalized: an Object still being
		// deleted when its namespace is deleted can no longer record its
		// ProviderConfig usage there and holds the namespace for good.
		if left := objectsComposing(t, multiNS, oldName); len(left) > 0 {
			return false, fmt.Sprintf("Objects of the old identity still here: %v", left)
		}
		return true, ""
	})
	t.Logf("identity rotated %s after the claim changed: new token minted, executor moved, old token Secret and ServiceAccount deleted, their Objects here finalized (deletionPolicy Orphan)", d.Round(time.Millisecond))

	if ok, user := tokenReview(t, a, oldToken); ok {
		t.Errorf("worker-a still authenticates the old token, as %s", user)
	}
	if ok, user := tokenReview(t, a, string(newToken)); !ok || user != "system:serviceaccount:"+multiNS+":"+newName {
		t.Errorf("worker-a authenticates the new token: %t as %q, want the new identity's ServiceAccount", ok, user)
	}

	// The new identity is a credential for Armada, not a key to the
	// worker: as its ServiceAccount, a SubjectAccessReview in worker-a
	// allows nothing outside the executor's namespace.
	newUser := "system:serviceaccount:" + multiNS + ":" + newName
	for _, ra := range []authzv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets", Namespace: "kube-system"},
		{Verb: "create", Resource: "pods", Namespace: "default"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	} {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: newUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + multiNS, "system:authenticated"}, ResourceAttributes: &ra,
		}}
		if err := a.kube().Create(context.Background(), sar); err != nil {
			t.Fatalf("SubjectAccessReview in worker-a: %v", err)
		}
		if sar.Status.Allowed {
			t.Errorf("worker-a allows %s to %s %s in %q", newUser, ra.Verb, ra.Resource, ra.Namespace)
		}
	}

	// The scheduler reads the new password, and only the new one.
	settled(t, claim)
	sched := schedulerEnv(t, claim)
	if got := sched["ARMADA_AUTH_BASICAUTH_USERS_INTERNAL-EXECUTOR-WORKER-A-R1_PASSWORD"]; got != newName+"/password" {
		t.Errorf("the scheduler reads the new identity's password from %q, want %s/password", got, newName)
	}
	if got, ok := sched["ARMADA_AUTH_BASICAUTH_USERS_INTERNAL-EXECUTOR-WORKER-A_PASSWORD"]; ok {
		t.Errorf("the scheduler still accepts the old identity (its password from %s)", got)
	}
	if !bytes.Equal(gpuBefore, workerTemplate(t, gpu, claim.GetName()+"-executor-worker-gpu")) {
		t.Error("worker-gpu's executor rolled on worker-a's rotation")
	}
	if bytes.Equal(aBefore, workerTemplate(t, a, claim.GetName()+"-executor-worker-a")) {
		t.Error("worker-a's executor did not roll")
	}
	var rolled []string
	for k, tpl := range podTemplates(t, multiNS) {
		if !bytes.Equal(tpl.json, local[k].json) {
			rolled = append(rolled, k)
		}
	}
	slices.Sort(rolled)
	if want := []string{"StatefulSet " + claim.GetName() + "-scheduler"}; !slices.Equal(rolled, want) {
		t.Errorf("control-cluster workloads rolled: %v, want %v", rolled, want)
	}
	t.Logf("rotation done in %s; rolled here: %v, and worker-a's executor", time.Since(t0).Round(time.Millisecond), rolled)
}

// workerTemplate is a Deployment's pod template in a worker, as JSON.
func workerTemplate(t *testing.T, w *worker, name string) []byte {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := w.kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: name}, d); err != nil {
		t.Fatalf("%s: %v", w.name, err)
	}
	b, err := json.Marshal(d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// executorEnv is a worker Deployment's first container's env: plain
// values, and <secret>/<key> for a Secret's.
func executorEnv(t *testing.T, w *worker, name string) map[string]string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := w.kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: name}, d); err != nil {
		if kerrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("%s: %v", w.name, err)
	}
	return envOf(d.Spec.Template.Spec.Containers[0].Env)
}

// schedulerEnv is the scheduler StatefulSet's first container's env.
func schedulerEnv(t *testing.T, claim *unstructured.Unstructured) map[string]string {
	t.Helper()
	s := &appsv1.StatefulSet{}
	if err := kube().Get(context.Background(), client.ObjectKey{Namespace: multiNS, Name: claim.GetName() + "-scheduler"}, s); err != nil {
		t.Fatal(err)
	}
	return envOf(s.Spec.Template.Spec.Containers[0].Env)
}

func envOf(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		out[e.Name] = e.Value
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
			out[e.Name] = r.SecretKeyRef.Name + "/" + r.SecretKeyRef.Key
		}
	}
	return out
}

// tokenReview asks a worker's API server whether it authenticates token,
// and as whom.
func tokenReview(t *testing.T, w *worker, token string) (bool, string) {
	t.Helper()
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
	if err := w.kube().Create(context.Background(), tr); err != nil {
		t.Fatalf("TokenReview in %s: %v", w.name, err)
	}
	return tr.Status.Authenticated, tr.Status.User.Username
}

// objectsComposing names the provider-kubernetes Objects in namespace ns
// whose manifest is an object named name.
func objectsComposing(t *testing.T, ns, name string) []string {
	t.Helper()
	var out []string
	for _, o := range objectsIn(t, ns) {
		if n, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "manifest", "metadata", "name"); n == name {
			out = append(out, o.GetName())
		}
	}
	return out
}

// objectsIn lists the provider-kubernetes Objects in namespace ns.
func objectsIn(t *testing.T, ns string) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiK8sObject)
	l.SetKind("ObjectList")
	if err := kube().List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}
