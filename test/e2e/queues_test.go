package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// TestQueues applies an Armada with a platform-defined queue and a team's
// ArmadaQueueClaim on it, runs provider-armada's controllers against the
// control plane, and checks both queues appear in an Armada API: the
// in-memory Armada, which accepts only the user and password the function
// generated for provider-armada and grants queue permissions only to the
// group the function configured. The Armada server's in-cluster address is
// dialled to it; nothing else is changed. An ArmadaQueueClaim naming an
// Armada that does not exist reports the field.
func TestQueues(t *testing.T) {
	ns := "e2e-queues"
	claim := install(t, "minimal", ns, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"name": "research", "priorityFactor": "2", "groupOwners": []any{"researchers"}},
		}, "spec", "queues")
	})
	armada, serverAddr := armadaAsComposed(t, claim)
	ctx := t.Context()
	runProvider(ctx, t, ns, func(ctx context.Context, addr string) (net.Conn, error) {
		if addr != serverAddr {
			return nil, errors.Errorf("unexpected Armada address %s, want the composed server %s", addr, serverAddr)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", armada.Address())
	})

	team := teamQueueClaim(ns, "team-ml", claim.GetName())
	namespace(t, "team-ml")
	tenancyPolicy(t, "team-ml", map[string]any{"queueArmadas": []any{map[string]any{"namespace": ns, "name": claim.GetName()}}})
	apply(t, team)
	t.Cleanup(func() { _ = kube().Delete(context.Background(), team) })

	for _, q := range []string{"research", "ml"} {
		d := waitFor(t, "queue "+q+" in Armada", func() (bool, string) {
			_, ok := armada.Queue(q)
			return ok, fmt.Sprintf("queues in Armada: %v; Queue objects: %s", armada.QueueNames(), queueStates(t, ns))
		})
		t.Logf("queue %s created in Armada %s after the provider started", q, d.Round(time.Millisecond))
	}
	if got, _ := armada.Queue("research"); got.PriorityFactor != 2 {
		t.Errorf("queue research has priority factor %v, want 2", got.PriorityFactor)
	}
	waitFor(t, "the team's claim Ready", func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaQueueClaim", "team-ml", "ml")
		s, r, m := condition(c, "Ready")
		q, _, _ := unstructured.NestedString(c.Object, "status", "queue")
		return s == "True" && q == "ml", fmt.Sprintf("Ready=%s %s: %s; status.queue %q", s, r, m, q)
	})
	claimCondition(t, claim, "QueuesReady", "True")
	converge(t, claim)

	missing := teamQueueClaim(ns, "team-lost", "no-such-armada")
	namespace(t, "team-lost")
	tenancyPolicy(t, "team-lost", map[string]any{"queueArmadas": []any{map[string]any{"namespace": ns, "name": "no-such-armada"}}})
	apply(t, missing)
	t.Cleanup(func() { _ = kube().Delete(context.Background(), missing) })
	waitFor(t, "the claim's XR to name spec.armada.name", func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaQueueClaim", "team-lost", "ml")
		name, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
		if name == "" {
			return false, "no XR yet"
		}
		xr := get(t, claimAPIVersion, "XArmadaQueue", "", name)
		if xr == nil {
			return false, "no XR yet"
		}
		s, r, m := condition(xr, "Synced")
		return s == "False" && strings.Contains(m, "spec.armada.name: Not found"), fmt.Sprintf("Synced=%s %s: %s", s, r, m)
	})
}

// teamQueueClaim is examples/team-queue.yaml's claim, in ns, targeting the
// ArmadaClaim armada in armadaNS.
func teamQueueClaim(armadaNS, ns, armada string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimAPIVersion, "kind": "ArmadaQueueClaim",
		"metadata": map[string]any{"name": "ml", "namespace": ns},
		"spec": map[string]any{
			"armada":      map[string]any{"name": armada, "namespace": armadaNS},
			"groupOwners": []any{"team-ml"},
			// Not <ns>-jobs: that is an ArmadaClaim's default job
			// namespace, which a team queue may not name.
			"namespaces": []any{ns + "-ml"},
		},
	}}
}

// runProvider runs provider-armada's controllers against the control plane
// until ctx is done, for the namespaced objects in namespace ns only (the
// Armada's, where its ProviderConfig and Queues are), dialling Armada with
// dial. Limited to ns because tests run side by side (parallel): a manager
// watching every namespace puts its in-use finalizer on other tests'
// ProviderConfigs, which then outlive their Armadas once it stops.
func runProvider(ctx context.Context, t *testing.T, ns string, dial func(context.Context, string) (net.Conn, error)) {
	t.Helper()
	// Each test that runs provider-armada starts its own manager in this
	// one process; controller-runtime refuses a controller name twice.
	mgr, err := ctrl.NewManager(cp.RESTConfig(), ctrl.Options{
		Metrics: server.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Client:     provider.ClientOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := armadav1.SchemeBuilder.AddToScheme(mgr.GetScheme()); err != nil {
		t.Fatal(err)
	}
	o := controller.Options{
		Logger: logging.NewNopLogger(), PollInterval: 5 * time.Second, MaxConcurrentReconciles: 2,
		GlobalRateLimiter: ratelimiter.NewGlobal(100),
	}
	if err := provider.Setup(mgr, provider.Options{Controller: o, CreationGracePeriod: time.Second, Dialer: dial}); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("provider-armada stopped: %v", err)
		}
	}()
}

// queueStates summarises the Queue objects in ns and their Synced
// conditions, for failure messages.
func queueStates(t *testing.T, ns string) string {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(armadav1.SchemeGroupVersion.String())
	l.SetKind("QueueList")
	if err := kube().List(context.Background(), l, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var out []string
	for i := range l.Items {
		s, r, m := condition(&l.Items[i], "Synced")
		out = append(out, fmt.Sprintf("%s Synced=%s %s %s", l.Items[i].GetName(), s, r, m))
	}
	return strings.Join(out, "; ")
}

// serverAuth reads a user's groups and the permission group mapping from
// the server's composed config Secret.
func serverAuth(t *testing.T, ns, secret, user string) (groups []string, grants map[string][]string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := kube().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: secret}, s); err != nil {
		t.Fatalf("cannot read the server's config: %v", err)
	}
	var cfg struct {
		Auth struct {
			BasicAuth struct {
				Users map[string]struct {
					Groups []string `json:"groups"`
				} `json:"users"`
			} `json:"basicAuth"`
			PermissionGroupMapping map[string][]string `json:"permissionGroupMapping"`
		} `json:"auth"`
	}
	if err := yaml.Unmarshal(s.Data["config.yaml"], &cfg); err != nil {
		t.Fatalf("cannot parse the server's config: %v", err)
	}
	u, ok := cfg.Auth.BasicAuth.Users[user]
	if !ok {
		t.Fatalf("the server's config has no basic-auth user %s", user)
	}
	return u.Groups, cfg.Auth.PermissionGroupMapping
}

// armadaAsComposed starts the in-memory Armada in the composed server's
// place once the claim has composed provider-armada's credentials: it
// accepts only the user and password the function generated for
// provider-armada, authorizes as the composed server's config does (the
// user's groups and the queue permissions' groups come from it), and
// serves TLS (on by default) with the composed server's certificate from
// the composed TLS Secret, as the server's pod mounts it, so
// provider-armada must trust the composed CA for the server's name. It
// returns the server and the composed server's in-cluster address.
func armadaAsComposed(t *testing.T, claim *unstructured.Unstructured) (*armadatest.Server, string) {
	t.Helper()
	ns, name := claim.GetNamespace(), claim.GetName()
	secret := &corev1.Secret{}
	waitFor(t, "provider-armada's credentials composed", func() (bool, string) {
		_, refs := composed(t, claim)
		markHealthy(t, refs)
		err := kube().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-provider-armada"}, secret)
		return err == nil, fmt.Sprint(err)
	})
	user, password := string(secret.Data[corev1.BasicAuthUsernameKey]), string(secret.Data[corev1.BasicAuthPasswordKey])
	groups, grants := serverAuth(t, ns, name+"-server-config", user)
	ctx := t.Context()
	tlsSecret := &corev1.Secret{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-tls"}, tlsSecret); err != nil {
		t.Fatalf("the TLS Secret: %v", err)
	}
	cert, err := tls.X509KeyPair(tlsSecret.Data["server.crt"], tlsSecret.Data["server.key"])
	if err != nil {
		t.Fatalf("the composed server certificate: %v", err)
	}
	armada, err := armadatest.Start(ctx, armadatest.Options{
		Users: map[string]armadatest.User{user: {Password: password, Groups: groups}},
		PermissionGroups: map[armadatest.Permission][]string{
			armadatest.CreateQueue: grants["create_queue"], armadatest.DeleteQueue: grants["delete_queue"],
		},
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(armada.Close)
	return armada, name + "-server." + ns + ".svc:50051"
}
