package queue_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

var (
	benchQueues      = flag.Int("queues", 1000, "queues each benchmark iteration reconciles")
	benchConcurrency = flag.Int("concurrency", 16, "concurrent reconciles (one shared connection)")
)

// benchConn starts an in-memory Armada with basic auth and dials it as the
// provider does, reading the password from a Secret.
func benchConn(b *testing.B) (*armadatest.Server, *armadaclient.Conn) {
	b.Helper()
	s, err := armadatest.Start(b.Context(), armadatest.Options{Users: map[string]armadatest.User{"provider": {Password: "pw"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data:       map[string][]byte{"username": []byte("provider"), "password": []byte("pw")},
	}).Build()
	sel := func(k string) armadav1.SecretKeySelector { return armadav1.SecretKeySelector{Name: "creds", Key: k} }
	conn, err := armadaclient.Dial(context.Background(), kube, armadaclient.Config{
		Namespace: "ns",
		Spec: armadav1.ProviderConfigSpec{
			Endpoint: s.Address(),
			TLS:      armadav1.TLS{Insecure: true},
			Credentials: armadav1.Credentials{
				Source: armadav1.CredentialsBasic,
				Basic:  &armadav1.BasicAuth{UsernameSecretRef: sel("username"), PasswordSecretRef: sel("password")},
			},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return s, conn
}

// benchKube is a stand-in API server holding the Secret and the
// ProviderConfig "armada" for the Armada at addr, answering from memory
// (controller-runtime's fake client spends most of its time rebuilding a
// REST mapper per Create, which would swamp the provider's own cost).
// ProviderConfigUsages are absent, so each Connect creates one.
func benchKube(addr string) client.Client {
	sel := func(k string) armadav1.SecretKeySelector { return armadav1.SecretKeySelector{Name: "creds", Key: k} }
	spec := armadav1.ProviderConfigSpec{
		Endpoint: addr,
		TLS:      armadav1.TLS{Insecure: true},
		Credentials: armadav1.Credentials{
			Source: armadav1.CredentialsBasic,
			Basic:  &armadav1.BasicAuth{UsernameSecretRef: sel("username"), PasswordSecretRef: sel("password")},
		},
	}
	return &test.MockClient{
		MockGet: func(_ context.Context, key client.ObjectKey, obj client.Object) error {
			switch o := obj.(type) {
			case *corev1.Secret:
				o.Data = map[string][]byte{"username": []byte("provider"), "password": []byte("pw")}
			case *armadav1.ProviderConfig:
				o.SetNamespace(key.Namespace)
				o.SetName(key.Name)
				o.Spec = spec
			default:
				return kerrors.NewNotFound(schema.GroupResource{}, key.Name)
			}
			return nil
		},
		MockCreate: test.NewMockCreateFn(nil),
	}
}

// forEachQueue runs fn for *benchQueues queue names at *benchConcurrency
// and reports queues/s.
func forEachQueue(b *testing.B, fn func(ctx context.Context, iteration, i int) error) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for n := 0; b.Loop(); n++ {
		g := &errgroup.Group{}
		g.SetLimit(*benchConcurrency)
		for i := range *benchQueues {
			g.Go(func() error { return fn(ctx, n, i) })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N**benchQueues)/time.Since(start).Seconds(), "queues/s")
}

// newCR returns the Queue for queue i of an iteration.
func newCR(iteration, i int) *armadav1.Queue {
	cr := &armadav1.Queue{}
	cr.SetName(fmt.Sprintf("q-%d-%d", iteration, i))
	cr.Spec.ForProvider = armadav1.QueueParameters{
		PriorityFactor: "1.5",
		UserOwners:     []string{"provider"},
		Permissions: []armadav1.QueuePermission{{
			Subjects: []armadav1.PermissionSubject{{Kind: armadav1.SubjectKindGroup, Name: "team"}},
			Verbs:    []armadav1.PermissionVerb{armadav1.VerbSubmit, armadav1.VerbWatch},
		}},
		Labels: map[string]string{"team": "a"},
	}
	return cr
}

// BenchmarkReconcileQueues reconciles *benchQueues new queues per
// iteration through the external client, as the managed reconciler
// would (Observe finds none, Create makes it), and compares that with the
// floor: one raw GetQueue round trip per queue over the same connection
// at the same concurrency.
func BenchmarkReconcileQueues(b *testing.B) {
	b.Run("ObserveCreate", func(b *testing.B) {
		_, conn := benchConn(b)
		e := queue.NewExternal(conn)
		forEachQueue(b, func(ctx context.Context, n, i int) error {
			cr := newCR(n, i)
			o, err := e.Observe(ctx, cr)
			if err != nil || o.ResourceExists {
				return errors.Errorf("observe %s: exists %t, %w", cr.GetName(), o.ResourceExists, err)
			}
			_, err = e.Create(ctx, cr)
			return err
		})
	})
	b.Run("ConnectObserveCreate", func(b *testing.B) {
		// As ObserveCreate, but each queue connects as a reconcile does:
		// track the ProviderConfig's usage, read the config and its
		// Secret, dial a new connection, and close it afterwards.
		s, _ := benchConn(b)
		c := queue.NewConnector(benchKube(s.Address()))
		forEachQueue(b, func(ctx context.Context, n, i int) error {
			cr := newCR(n, i)
			cr.SetNamespace("ns")
			cr.SetUID(types.UID(cr.GetName()))
			cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: armadav1.ProviderConfigKind, Name: "armada"}
			e, err := c.Connect(ctx, cr)
			if err != nil {
				return err
			}
			defer func() { _ = e.Disconnect(ctx) }()
			o, err := e.Observe(ctx, cr)
			if err != nil || o.ResourceExists {
				return errors.Errorf("observe %s: exists %t, %w", cr.GetName(), o.ResourceExists, err)
			}
			_, err = e.Create(ctx, cr)
			return err
		})
	})
	b.Run("ObserveUpToDate", func(b *testing.B) {
		s, conn := benchConn(b)
		e := queue.NewExternal(conn)
		for i := range *benchQueues {
			q, err := queue.ToAPI(fmt.Sprintf("q-0-%d", i), newCR(0, i).Spec.ForProvider)
			if err != nil {
				b.Fatal(err)
			}
			s.SetQueue(canonical(q))
		}
		forEachQueue(b, func(ctx context.Context, _, i int) error {
			cr := newCR(0, i)
			o, err := e.Observe(ctx, cr)
			if err != nil || !o.ResourceUpToDate {
				return errors.Errorf("observe %s: up to date %t (%s), %w", cr.GetName(), o.ResourceUpToDate, o.Diff, err)
			}
			return nil
		})
	})
	b.Run("FloorGetQueue", func(b *testing.B) {
		s, conn := benchConn(b)
		for i := range *benchQueues {
			s.SetQueue(&api.Queue{Name: fmt.Sprintf("q-0-%d", i), PriorityFactor: 1})
		}
		forEachQueue(b, func(ctx context.Context, _, i int) error {
			ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
			defer cancel()
			_, err := conn.Queues.GetQueue(ctx, &api.QueueGetRequest{Name: fmt.Sprintf("q-0-%d", i)})
			return err
		})
	})
}

// canonical folds q's owners into its first permission, as Armada stores
// them.
func canonical(q *api.Queue) *api.Queue {
	owners := &api.Queue_Permissions{Verbs: []string{"submit", "cancel", "preempt", "reprioritize", "watch"}}
	for _, u := range q.GetUserOwners() {
		owners.Subjects = append(owners.Subjects, &api.Queue_Permissions_Subject{Kind: "User", Name: u})
	}
	q.Permissions = append([]*api.Queue_Permissions{owners}, q.Permissions...)
	q.UserOwners = nil
	return q
}
