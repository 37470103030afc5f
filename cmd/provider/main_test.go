package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// secretCalls records the provider's calls to the API server about
// Secrets, as "METHOD path[?watch]".
type secretCalls struct {
	mu    sync.Mutex
	calls map[string]bool
}

// wrap returns a transport that records into s and sends through next.
func (s *secretCalls) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if p := r.URL.Path; strings.HasSuffix(p, "/secrets") || strings.Contains(p, "/secrets/") {
			call := r.Method + " " + p
			if r.URL.Query().Get("watch") != "" {
				call += "?watch"
			}
			s.mu.Lock()
			s.calls[call] = true
			s.mu.Unlock()
		}
		return next.RoundTrip(r)
	})
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRun runs the provider as its command line would, against a local
// kube-apiserver and an in-memory Armada, and waits for a Queue to be
// Ready: flags, scheme, manager and controllers wired end to end. Its
// credentials are in a Secret, among many others; the provider reads
// that one Secret and never lists or watches Secrets, so it holds no
// other Secret in memory and needs no list or watch on them.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := controlplane.StartForTest(t, controlplane.Options{
		KubernetesOnly: true,
		ExtraCRDDirs:   []string{filepath.Join("..", "..", "package", "provider", "crds")},
	})
	armada, err := armadatest.Start(ctx, armadatest.Options{Users: map[string]armadatest.User{"provider": {Password: "pw"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer armada.Close()

	var c cli
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{
		"--kubeconfig", cp.Kubeconfig(), "--poll", "1s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
	}); err != nil {
		t.Fatal(err)
	}
	rec := &secretCalls{calls: map[string]bool{}}
	c.wrap = rec.wrap
	done := make(chan error, 1)
	go func() { done <- c.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := armadav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const unrelated = 50
	objs := make([]client.Object, 0, 5+unrelated)
	objs = append(objs,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "armada-creds"},
			Data:       map[string][]byte{"username": []byte("provider"), "password": []byte("pw")},
		},
		&armadav1.ClusterProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: armadav1.ProviderConfigSpec{
				Endpoint: armada.Address(),
				TLS:      armadav1.TLS{Insecure: true},
				Credentials: armadav1.Credentials{Source: armadav1.CredentialsBasic, Basic: &armadav1.BasicAuth{
					UsernameSecretRef: armadav1.SecretKeySelector{Namespace: "team-a", Name: "armada-creds", Key: "username"},
					PasswordSecretRef: armadav1.SecretKeySelector{Namespace: "team-a", Name: "armada-creds", Key: "password"},
				}},
			},
		},
		&armadav1.Queue{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
			Spec:       armadav1.QueueSpec{ForProvider: armadav1.QueueParameters{PriorityFactor: "2"}},
		},
	)
	for i := range unrelated {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: fmt.Sprintf("unrelated-%d", i)},
			Data:       map[string][]byte{"key": []byte("value")},
		})
	}
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatalf("cannot create %T: %v", o, err)
		}
	}

	// The Queue names no provider config, so it gets the default
	// ClusterProviderConfig "default".
	deadline := time.Now().Add(time.Minute)
	for {
		q := &armadav1.Queue{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "team-a"}, q); err != nil {
			t.Fatal(err)
		}
		if q.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Queue not Ready after a minute: %+v", q.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, ok := armada.Queue("team-a"); !ok || got.GetPriorityFactor() != 2 {
		t.Errorf("Armada's queue team-a: %v (exists %t), want priority factor 2", got, ok)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"GET /api/v1/namespaces/team-a/secrets/armada-creds"}
	if d := cmp.Diff(want, slices.Sorted(maps.Keys(rec.calls))); d != "" {
		t.Errorf("the provider's calls about Secrets: -want, +got:\n%s", d)
	}
}
