package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/provider"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// waitTimeout bounds each wait for the provider to act.
const waitTimeout = 60 * time.Second

// releaseAfter is how long a Queue waits for Armada once its
// ProviderConfig is being deleted, short for the tests.
const releaseAfter = 5 * time.Second

// env is a kube-apiserver with provider-armada's CRDs, the provider's
// controllers running in-process against it, and a client.
type env struct {
	kube client.Client
}

// startEnv starts a Kubernetes-only control plane with the provider's
// CRDs and runs the provider's controllers until the test ends.
func startEnv(t *testing.T) *env {
	t.Helper()
	cp := controlplane.StartForTest(t, controlplane.Options{
		KubernetesOnly: true,
		ExtraCRDDirs:   []string{testutil.Path("package", "provider", "crds")},
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := armadav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cp.RESTConfig(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 provider.ClientOptions(),
	})
	if err != nil {
		t.Fatalf("cannot create manager: %v", err)
	}
	err = provider.Setup(mgr, provider.Options{
		Controller: controller.Options{
			Logger:                  logging.NewNopLogger(),
			PollInterval:            time.Second,
			MaxConcurrentReconciles: 4,
			GlobalRateLimiter:       ratelimiter.NewGlobal(100),
		},
		// The in-memory Armada reads its own writes, and the test deletes
		// a queue behind the provider's back soon after creating it.
		CreationGracePeriod: time.Second,
		ReleaseAfter:        releaseAfter,
	})
	if err != nil {
		t.Fatalf("cannot set up provider: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return &env{kube: mgr.GetClient()}
}

// The users of the in-memory Armada: the provider's (an admin) and one
// without permission to create or delete queues.
const (
	adminUser, adminPassword   = "provider", "provider-password"
	viewerUser, viewerPassword = "viewer", "viewer-password"
)

// startArmada starts an in-memory Armada that grants create_queue and
// delete_queue to the admins group only.
func startArmada(ctx context.Context, t *testing.T) *armadatest.Server {
	t.Helper()
	s, err := armadatest.Start(ctx, armadatest.Options{
		Users: map[string]armadatest.User{
			adminUser:  {Password: adminPassword, Groups: []string{"admins"}},
			viewerUser: {Password: viewerPassword},
		},
		PermissionGroups: map[armadatest.Permission][]string{
			armadatest.CreateQueue: {"admins"},
			armadatest.DeleteQueue: {"admins"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// namespace creates a namespace for one test, with a Secret holding user's
// password and a ProviderConfig "armada" that authenticates as user to
// the Armada at addr in plaintext.
func (e *env) namespace(ctx context.Context, t *testing.T, addr, user, password string) string {
	t.Helper()
	ns := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	e.create(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.create(ctx, t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "armada-credentials"},
		Data:       map[string][]byte{"username": []byte(user), "password": []byte(password)},
	})
	e.create(ctx, t, &armadav1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "armada"},
		Spec:       providerConfigSpec(addr, ""),
	})
	return ns
}

// providerConfigSpec is a plaintext basic-auth config reading the Secret
// armada-credentials in secretNamespace (empty: the config's own).
func providerConfigSpec(addr, secretNamespace string) armadav1.ProviderConfigSpec {
	sel := func(key string) armadav1.SecretKeySelector {
		return armadav1.SecretKeySelector{Name: "armada-credentials", Namespace: secretNamespace, Key: key}
	}
	return armadav1.ProviderConfigSpec{
		Endpoint: addr,
		TLS:      armadav1.TLS{Insecure: true},
		Credentials: armadav1.Credentials{
			Source: armadav1.CredentialsBasic,
			Basic:  &armadav1.BasicAuth{UsernameSecretRef: sel("username"), PasswordSecretRef: sel("password")},
		},
	}
}

// create creates obj, failing the test on error.
func (e *env) create(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.kube.Create(ctx, obj); err != nil {
		t.Fatalf("cannot create %T %s: %v", obj, obj.GetName(), err)
	}
}

// newQueue returns a Queue using the namespace's ProviderConfig "armada".
func newQueue(ns, name string, p armadav1.QueueParameters) *armadav1.Queue {
	q := &armadav1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	q.Spec.ForProvider = p
	q.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: armadav1.ProviderConfigKind, Name: "armada"}
	return q
}

// poll is how the harness waits for the provider and the fake Armada.
var poll = testutil.Wait{Timeout: waitTimeout, Interval: 100 * time.Millisecond}

// waitFor polls until check passes on the Queue ns/name, failing the test
// with check's last complaint on timeout.
func (e *env) waitFor(ctx context.Context, t *testing.T, ns, name string, check func(q *armadav1.Queue, found bool) string) *armadav1.Queue {
	t.Helper()
	var q *armadav1.Queue
	poll.Until(t, "Queue "+ns+"/"+name, func() (bool, string) {
		q = &armadav1.Queue{}
		err := e.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, q)
		if err != nil && !kerrors.IsNotFound(err) {
			t.Fatalf("cannot get Queue %s/%s: %v", ns, name, err)
		}
		why := check(q, err == nil)
		return why == "", why
	})
	return q
}

// conditions checks the Queue's Ready and Synced conditions: status and
// reason, and that the Synced message contains msg.
func conditions(ready, synced xpv2.ConditionReason, msg string) func(*armadav1.Queue, bool) string {
	return func(q *armadav1.Queue, found bool) string {
		if !found {
			return "not found"
		}
		r, s := q.GetCondition(xpv2.TypeReady), q.GetCondition(xpv2.TypeSynced)
		if r.Reason != ready || s.Reason != synced || !strings.Contains(s.Message, msg) {
			return fmt.Sprintf("want Ready reason %s, Synced reason %s with message containing %q; got Ready %s/%s, Synced %s/%s %q",
				ready, synced, msg, r.Status, r.Reason, s.Status, s.Reason, s.Message)
		}
		return ""
	}
}

// gone passes once the Queue no longer exists.
func gone(_ *armadav1.Queue, found bool) string {
	if found {
		return "still exists"
	}
	return ""
}

// waitArmada polls until check passes on Armada's queue name.
func waitArmada(t *testing.T, s *armadatest.Server, name string, check func(q *armadaQueue, found bool) string) {
	t.Helper()
	poll.Until(t, "Armada queue "+name, func() (bool, string) {
		why := check(s.Queue(name))
		return why == "", why
	})
}

// update applies mutate to the latest Queue ns/name and updates it,
// retrying on conflicts with the provider's own writes.
func (e *env) update(ctx context.Context, t *testing.T, ns, name string, mutate func(*armadav1.Queue)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q := &armadav1.Queue{}
		if err := e.kube.Get(ctx, clientKey(ns, name), q); err != nil {
			return err
		}
		mutate(q)
		return e.kube.Update(ctx, q)
	})
	if err != nil {
		t.Fatalf("cannot update Queue %s/%s: %v", ns, name, err)
	}
}

// corev1Namespace is a Namespace.
type corev1Namespace = corev1.Namespace

// clientKey is the key of the object ns/name.
func clientKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
