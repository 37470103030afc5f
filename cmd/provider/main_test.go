package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// TestRun runs the provider as its command line would, against a local
// kube-apiserver and an in-memory Armada, and waits for a Queue to be
// Ready: flags, scheme, manager and controllers wired end to end.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := controlplane.StartForTest(t, controlplane.Options{
		KubernetesOnly: true,
		ExtraCRDDirs:   []string{filepath.Join("..", "..", "package", "provider", "crds")},
	})
	armada, err := armadatest.Start(ctx, armadatest.Options{Anonymous: true})
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
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&v1alpha1.ClusterProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha1.ProviderConfigSpec{
				Endpoint:    armada.Address(),
				TLS:         v1alpha1.TLS{Insecure: true},
				Credentials: v1alpha1.Credentials{Source: v1alpha1.CredentialsNone},
			},
		},
		&v1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
			Spec:       v1alpha1.QueueSpec{ForProvider: v1alpha1.QueueParameters{PriorityFactor: "2"}},
		},
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
		q := &v1alpha1.Queue{}
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
}
