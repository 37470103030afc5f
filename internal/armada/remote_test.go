package armada

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// remoteSpec has one executor here and two in worker clusters.
func remoteSpec() v1alpha1.ArmadaSpec {
	return spec(func(s *v1alpha1.ArmadaSpec) {
		s.Scheduling.Pools = []v1alpha1.Pool{{Name: "cpu"}, {Name: "gpu"}}
		s.ExecutorAPI = &v1alpha1.ExecutorAPI{URL: "executors.example.com:443", CASecretRef: &v1alpha1.SecretKeyRef{Name: "ca", Key: "ca.crt"}}
		s.Executors = []v1alpha1.Executor{
			{ClusterID: "here", Pool: "cpu"},
			{ClusterID: "a", Pool: "cpu", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Name: "worker-a"}}},
			{ClusterID: "g", Pool: "gpu", Cluster: &v1alpha1.ExecutorCluster{ProviderConfigRef: v1alpha1.ProviderConfigRef{Kind: "ProviderConfig", Name: "worker-g"}}},
		}
	})
}

// manifest unwraps a provider-kubernetes Object.
func manifest(t *testing.T, o *Object) (*unstructured.Unstructured, map[string]any) {
	t.Helper()
	u, ok := o.Object.(*unstructured.Unstructured)
	if !ok || u.GetKind() != "Object" {
		t.Fatalf("%s is a %T %s, want a provider-kubernetes Object", o.Key, o.Object, o.Object.GetObjectKind().GroupVersionKind().Kind)
	}
	m, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
	return u, m
}

func TestRemoteExecutors(t *testing.T) {
	s := remoteSpec()
	// The identities' ServiceAccounts exist in the workers: their token
	// Secrets are composed (TestIdentityTokenAfterServiceAccount).
	out := render(t, s, Observed{Jobs: migrated(t, s), Ready: map[string]bool{
		"executor-a-identity-serviceaccount": true, "executor-g-identity-serviceaccount": true,
	}})

	// Every object of a remote executor, and each worker cluster's shared
	// objects, go to its cluster wrapped in an Object; the local executor's
	// do not.
	for key, want := range map[string]string{
		"executor-a-workload": "ClusterProviderConfig/worker-a", "executor-a-config": "ClusterProviderConfig/worker-a",
		"executor-a-clusterrolebinding": "ClusterProviderConfig/worker-a", "executor-a-identity": "ClusterProviderConfig/worker-a",
		"executor-g-workload": "ProviderConfig/worker-g", "cluster-pc-worker-g-namespace": "ProviderConfig/worker-g",
		"cluster-worker-a-executor-clusterrole":                       "ClusterProviderConfig/worker-a",
		"cluster-worker-a-priorityclass-armada-armada-0abc57-default": "ClusterProviderConfig/worker-a",
		"cluster-pc-worker-g-executor-api-ca":                         "ProviderConfig/worker-g",
	} {
		o := find(out, key)
		if o == nil {
			t.Errorf("%s is not composed", key)
			continue
		}
		u, _ := manifest(t, o)
		ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "providerConfigRef")
		if got := ref["kind"] + "/" + ref["name"]; got != want {
			t.Errorf("%s goes to %s, want %s", key, got, want)
		}
	}
	if _, ok := find(out, "executor-here-workload").Object.(*appsv1.Deployment); !ok {
		t.Errorf("the local executor is not a plain Deployment")
	}

	// No password is ever written into an Object: the identity's is born
	// in the worker cluster, and the executor reads it there.
	for _, o := range out.Objects {
		u, ok := o.Object.(*unstructured.Unstructured)
		if !ok || u.GetKind() != "Object" {
			continue
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		creds := find(out, keyCredentials).Object.(*corev1.Secret)
		if len(creds.Data) == 0 {
			t.Fatal("no generated passwords to look for")
		}
		for user, pw := range creds.Data {
			if bytes.Contains(b, pw) || strings.Contains(string(b), base64.StdEncoding.EncodeToString(pw)) {
				t.Errorf("Object %s contains the password of %s", o.Key, user)
			}
		}
	}
	_, secret := manifest(t, find(out, "executor-a-identity"))
	if data, _ := secret["data"].(map[string]any); secret["type"] != string(corev1.SecretTypeServiceAccountToken) || len(data) > 0 {
		t.Errorf("identity Secret = %v, want an empty service-account token Secret", secret)
	}
	identity, _ := manifest(t, find(out, "executor-a-identity"))
	conn, _, _ := unstructured.NestedString(identity.Object, "spec", "writeConnectionSecretToRef", "name")
	if conn != "armada-executor-a-identity" {
		t.Errorf("identity connection Secret = %q", conn)
	}

	// The remote executor dials the exposed executor API over TLS as its
	// own identity, trusting the CA; the scheduler grants execute_jobs to
	// exactly the executors' identities.
	_, dep := manifest(t, find(out, "executor-a-workload"))
	b, err := json.Marshal(dep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"SSL_CERT_FILE"`, `"key":"token","name":"armada-executor-a-identity"`, `"secretName":"armada-executor-api-ca"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("remote executor Deployment lacks %s", want)
		}
	}
	_, cfgSecret := manifest(t, find(out, "executor-a-config"))
	var cfg map[string]any
	if err := decodeYAML(cfgSecret, &cfg); err != nil {
		t.Fatal(err)
	}
	wantConn := map[string]any{
		"armadaUrl": "executors.example.com:443", "forceNoTls": false,
		"basicAuth": map[string]any{"username": "internal-executor-a", "password": ""},
	}
	if diff := cmp.Diff(wantConn, cfg["executorApiConnection"]); diff != "" {
		t.Errorf("remote executorApiConnection: -want, +got:\n%s", diff)
	}
	// The scheduler accepts a remote identity only once its password has
	// arrived here: never a user with an empty password.
	users := func(out *Output) []string {
		u := config(t, out, "scheduler-config")["auth"].(map[string]any)["basicAuth"].(map[string]any)["users"].(map[string]any)
		var names []string
		for name, v := range u {
			if groups, _ := v.(map[string]any)["groups"].([]any); len(groups) > 0 && groups[0] == groupExecutors {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		return names
	}
	if diff := cmp.Diff([]string{"internal-executor"}, users(out)); diff != "" {
		t.Errorf("executors the scheduler accepts before any identity arrived: -want, +got:\n%s", diff)
	}
	o := Observed{
		Jobs: migrated(t, s), Ready: map[string]bool{"executor-a-identity": true, "executor-g-identity": true},
		Unsynced: map[string]string{"executor-g-identity": "cannot get value at data.token"},
	}
	out = render(t, s, o)
	if diff := cmp.Diff([]string{"internal-executor", "internal-executor-a"}, users(out)); diff != "" {
		t.Errorf("executors the scheduler accepts once a's identity arrived: -want, +got:\n%s", diff)
	}
	sched, err := json.Marshal(find(out, "scheduler-workload").Object)
	if err != nil {
		t.Fatal(err)
	}
	want := `"name":"ARMADA_AUTH_BASICAUTH_USERS_INTERNAL-EXECUTOR-A_PASSWORD","valueFrom":{"secretKeyRef":{"name":"armada-executor-a-identity","key":"password"}}`
	if !strings.Contains(string(sched), want) {
		t.Errorf("the scheduler does not read internal-executor-a's password from its connection Secret")
	}
}

// decodeYAML decodes a wrapped Secret manifest's config file.
func decodeYAML(secret map[string]any, into any) error {
	data, _ := secret["data"].(map[string]any)
	s, _ := data[configKey].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, into)
}

// TestRemoteExecutorMonitor checks that a remote executor's ServiceMonitor
// goes to its own cluster, where Prometheus can reach it, and a local
// component's stays here.
func TestRemoteExecutorMonitor(t *testing.T) {
	s := remoteSpec()
	s.Monitoring.Enabled = true
	out := render(t, s, Observed{Jobs: migrated(t, s)})
	u, m := manifest(t, find(out, "executor-a-servicemonitor"))
	if m["kind"] != "ServiceMonitor" {
		t.Errorf("executor a's monitor wraps a %v", m["kind"])
	}
	if ref, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name"); ref != "worker-a" {
		t.Errorf("executor a's monitor goes to %q, want worker-a", ref)
	}
	if _, ok := find(out, "server-servicemonitor").Object.(*unstructured.Unstructured); !ok || find(out, "server-servicemonitor").Object.GetObjectKind().GroupVersionKind().Kind != "ServiceMonitor" {
		t.Errorf("the server's monitor is not a plain ServiceMonitor here")
	}
}

func TestRemoteExecutorStatus(t *testing.T) {
	s := remoteSpec()
	o := Observed{Jobs: migrated(t, s), Unsynced: map[string]string{
		"executor-a-workload": "cannot connect to worker cluster: dial tcp 10.0.0.1:6443: connect: connection refused\nmore",
	}, Workloads: map[string]Workload{
		// Last seen available, before its cluster became unreachable.
		"executor-a": {Version: "0.22.7", Ready: true},
	}}
	out := render(t, s, o)
	want := []v1alpha1.ExecutorStatus{
		{ClusterID: "here", Cluster: "local", Reason: "Waiting for the workload to become available"},
		{
			ClusterID: "a", Cluster: "ClusterProviderConfig/worker-a",
			Reason: "Cannot reach worker cluster ClusterProviderConfig/worker-a: cannot connect to worker cluster: dial tcp 10.0.0.1:6443: connect: connection refused",
		},
		{ClusterID: "g", Cluster: "ProviderConfig/worker-g", Reason: "Waiting for the workload to become available"},
	}
	if diff := cmp.Diff(want, out.Status.Executors); diff != "" {
		t.Errorf("status.executors: -want, +got:\n%s", diff)
	}
	// Nothing is dropped because a worker cluster is unreachable.
	if find(out, "executor-a-workload") == nil || find(out, "cluster-worker-a-namespace") == nil {
		t.Errorf("an unreachable worker cluster's objects were dropped")
	}
}

// TestRenderLeavesInputAlone checks that Render changes nothing in the
// Install it is given, also when a remote identity has arrived (which
// the scheduler's config then names), so one Install renders the same
// for any observations, in any order.
func TestRenderLeavesInputAlone(t *testing.T) {
	s := remoteSpec()
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	before := *in
	before.Spec = *in.Spec.DeepCopy()
	o := Observed{Jobs: migrated(t, s), Ready: map[string]bool{identityResource("executor-a"): true}}
	if _, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("test"), "xr")}); err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	if !reflect.DeepEqual(before, *in) {
		t.Errorf("Render changed its input: established %v, want %v; spec diff (-before +after):\n%s",
			in.established, before.established, cmp.Diff(before.Spec, in.Spec))
	}
}

// TestIdentityTokenAfterServiceAccount: a remote identity's token Secret
// is composed only once its ServiceAccount exists in the worker (its
// Object is Ready), and stays composed once observed. The worker's token
// controller deletes a token Secret whose ServiceAccount is missing, and
// provider-kubernetes then waits about a minute before creating it again.
func TestIdentityTokenAfterServiceAccount(t *testing.T) {
	s := remoteSpec()
	for name, tc := range map[string]struct {
		observed Observed
		want     bool
	}{
		"nothing observed":            {Observed{}, false},
		"ServiceAccount not yet made": {Observed{Keys: map[string]bool{"executor-a-identity-serviceaccount": true}}, false},
		"ServiceAccount ready":        {Observed{Ready: map[string]bool{"executor-a-identity-serviceaccount": true}}, true},
		"ServiceAccount created":      {Observed{Created: map[string]bool{"executor-a-identity-serviceaccount": true}}, true},
		// Once composed it is never dropped, whatever its ServiceAccount's
		// Object reports (an unreachable worker).
		"token observed": {Observed{Keys: map[string]bool{"executor-a-identity": true}}, true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.observed.Jobs = migrated(t, s)
			out := render(t, s, tc.observed)
			if find(out, "executor-a-identity-serviceaccount") == nil {
				t.Fatal("the identity's ServiceAccount is not composed")
			}
			if got := find(out, "executor-a-identity") != nil; got != tc.want {
				t.Errorf("token Secret composed: %v, want %v", got, tc.want)
			}
		})
	}
}
