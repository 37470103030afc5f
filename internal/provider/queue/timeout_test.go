package queue

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// stalled is a TCP listener that accepts every connection and never
// reads, writes or closes it until the test ends: a peer that hangs.
func stalled(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// TestStalledPeers: every outbound call of provider-armada returns an
// error within its bound when the peer accepts the connection and never
// answers: Armada's gRPC port, its TLS handshake, and the OIDC token
// endpoint (with and without a deadline on the call).
func TestStalledPeers(t *testing.T) {
	ctx := context.Background()
	hang := stalled(t)
	armada, err := armadatest.Start(ctx, armadatest.Options{Tokens: map[string]string{"oidc-token": "provider"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(armada.Close)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data:       map[string][]byte{"client-secret": []byte("client-secret")},
	}).Build()
	oidc := armadav1.Credentials{Source: armadav1.CredentialsOIDCClientCredentials, OIDCClientCredentials: &armadav1.OIDCClientCredentials{
		TokenURL: "http://" + hang + "/token", ClientID: "provider",
		ClientSecretSecretRef: armadav1.SecretKeySelector{Name: "creds", Key: "client-secret"},
	}}
	none := armadav1.Credentials{Source: armadav1.CredentialsNone}
	// viaExternal is how the Queue controller calls Armada.
	viaExternal := func(ctx context.Context, c *armadaclient.Conn) error {
		_, err := NewExternal(c).Get(ctx, "q")
		return err
	}
	// withoutDeadline calls Armada with no deadline on the context: only
	// the token fetch's own HTTP timeout bounds it.
	withoutDeadline := func(ctx context.Context, c *armadaclient.Conn) error {
		_, err := c.Queues.GetQueue(ctx, &api.QueueGetRequest{Name: "q"})
		return armadaclient.Describe(err)
	}
	cases := map[string]struct {
		reason string
		spec   armadav1.ProviderConfigSpec
		call   func(context.Context, *armadaclient.Conn) error
		// want are substrings of the error.
		want []string
	}{
		"ArmadaNeverAnswers": {
			reason: "A gRPC call to an Armada that accepts and stalls times out.",
			spec:   armadav1.ProviderConfigSpec{Endpoint: hang, TLS: armadav1.TLS{Insecure: true}, Credentials: none},
			call:   viaExternal,
			want:   []string{"timed out waiting for Armada"},
		},
		"TLSHandshakeNeverAnswers": {
			reason: "A TLS handshake with a peer that stalls times out.",
			spec:   armadav1.ProviderConfigSpec{Endpoint: hang, Credentials: none},
			call:   viaExternal,
			want:   []string{"timed out waiting for Armada"},
		},
		"TokenEndpointNeverAnswers": {
			reason: "The call's deadline bounds the OIDC token fetch, which names the token endpoint.",
			spec:   armadav1.ProviderConfigSpec{Endpoint: armada.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: oidc},
			call:   viaExternal,
			want:   []string{"cannot get bearer token: cannot fetch a token from http://" + hang + "/token"},
		},
		"TokenEndpointNeverAnswersNoDeadline": {
			reason: "Without a deadline on the call, the token fetch's HTTP client still times out.",
			spec:   armadav1.ProviderConfigSpec{Endpoint: armada.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: oidc},
			call:   withoutDeadline,
			want:   []string{"cannot get bearer token: cannot fetch a token from http://" + hang + "/token", "Client.Timeout exceeded"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.spec.TimeoutSeconds = ptr.To[int32](1)
			conn, err := armadaclient.Dial(ctx, kube, armadaclient.Config{Spec: tc.spec, Namespace: "ns", Tokens: &armadaclient.TokenSources{}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx, conn) }()
			// The bound is 1s; this guard only catches a call that
			// hangs, so it is far from the bound and cannot flake.
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s\nthe call has not returned after 30s; its bound is 1s", tc.reason)
			}
			if err == nil {
				t.Fatalf("%s\nthe call succeeded; want an error containing %q", tc.reason, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s\nerror %q does not contain %q", tc.reason, err, w)
				}
			}
		})
	}
}
