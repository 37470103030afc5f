package armadaclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// selector selects key of the Secret "creds" in ns.
func selector(ns, key string) armadav1.SecretKeySelector {
	return armadav1.SecretKeySelector{Name: "creds", Namespace: ns, Key: key}
}

// serverCert returns a self-signed certificate for 127.0.0.1 and its PEM.
func serverCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "armada"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"armada.test"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// tokenServer is an OAuth2 token endpoint that issues "oidc-token" for
// client "provider" with secret "client-secret". It counts the tokens it
// issues in *issued, if not nil.
func tokenServer(t *testing.T, issued *atomic.Int32) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if issued != nil {
			issued.Add(1)
		}
		id, secret, _ := r.BasicAuth()
		if r.FormValue("grant_type") != "client_credentials" || id != "provider" || secret != "client-secret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"oidc-token","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(s.Close)
	return s.URL + "/token"
}

func TestDial(t *testing.T) {
	ctx := context.Background()
	cert, caPEM := serverCert(t)
	plain, err := armadatest.Start(ctx, armadatest.Options{
		Users:  map[string]armadatest.User{"provider": {Password: "pw"}},
		Tokens: map[string]string{"static-token": "provider", "oidc-token": "provider"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	secure, err := armadatest.Start(ctx, armadatest.Options{
		Users: map[string]armadatest.User{"provider": {Password: "pw"}},
		TLS:   &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secure.Close)
	for _, s := range []*armadatest.Server{plain, secure} {
		s.SetQueue(&api.Queue{Name: "q", PriorityFactor: 1})
	}
	tokenURL := tokenServer(t, nil)

	basic := func(ns string) armadav1.Credentials {
		return armadav1.Credentials{Source: armadav1.CredentialsBasic, Basic: &armadav1.BasicAuth{
			UsernameSecretRef: selector(ns, "username"), PasswordSecretRef: selector(ns, "password"),
		}}
	}
	cases := map[string]struct {
		reason    string
		namespace string
		spec      armadav1.ProviderConfigSpec
		// err is a substring of the error Dial or GetQueue returns; empty
		// means GetQueue succeeds.
		err string
	}{
		"BasicAuth": {
			reason: "Basic credentials from the config's own namespace authenticate.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: basic("")},
		},
		"BearerToken": {
			reason: "A static bearer token authenticates.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: armadav1.Credentials{
				Source: armadav1.CredentialsBearerToken, BearerToken: &armadav1.BearerToken{TokenSecretRef: selector("", "token")},
			}},
		},
		"OIDCClientCredentials": {
			reason: "The client-credentials grant fetches a token that authenticates.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: armadav1.Credentials{
				Source: armadav1.CredentialsOIDCClientCredentials,
				OIDCClientCredentials: &armadav1.OIDCClientCredentials{
					TokenURL: tokenURL, ClientID: "provider", ClientSecretSecretRef: selector("", "client-secret"), Scopes: []string{"armada"},
				},
			}},
		},
		"NoCredentials": {
			reason: "Without credentials Armada refuses the call, and says so.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: armadav1.Credentials{Source: armadav1.CredentialsNone}},
			err:  "unauthenticated (check the provider config's credentials)",
		},
		"TLSWithCA": {
			reason: "TLS trusting the CA from a Secret connects (cluster config, Secret namespace set).",
			spec: armadav1.ProviderConfigSpec{
				Endpoint: secure.Address(), Credentials: basic("ns"),
				TLS: armadav1.TLS{CASecretRef: &armadav1.SecretKeySelector{Name: "creds", Namespace: "ns", Key: "ca.crt"}},
			},
		},
		"TLSWithSystemRoots": {
			reason: "Without a CA the system roots are used, which do not trust a private CA.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: secure.Address(), Credentials: basic("")},
			err:  "Armada is unavailable",
		},
		"OtherNamespace": {
			reason: "A namespaced ProviderConfig may not read another namespace's Secrets.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: basic("other")},
			err:  `a ProviderConfig may only read Secrets in its own namespace "ns", not "other"`,
		},
		"ClusterConfigWithoutNamespace": {
			reason: "A ClusterProviderConfig must say which namespace its Secret is in.",
			spec:   armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: basic("")},
			err:    "a ClusterProviderConfig's Secret reference must set namespace",
		},
		"MissingKey": {
			reason: "A missing Secret key is named, not its value.", namespace: "ns",
			spec: armadav1.ProviderConfigSpec{Endpoint: plain.Address(), TLS: armadav1.TLS{Insecure: true}, Credentials: armadav1.Credentials{
				Source: armadav1.CredentialsBearerToken, BearerToken: &armadav1.BearerToken{TokenSecretRef: selector("", "nope")},
			}},
			err: `Secret ns/creds has no key "nope"`,
		},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data: map[string][]byte{
			"username": []byte("provider"), "password": []byte("pw"), "token": []byte("static-token"),
			"client-secret": []byte("client-secret"), "ca.crt": caPEM,
		},
	}).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			conn, err := armadaclient.Dial(ctx, kube, armadaclient.Config{Spec: tc.spec, Namespace: tc.namespace})
			if err == nil {
				defer func() { _ = conn.Close() }()
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err = conn.Queues.GetQueue(cctx, &api.QueueGetRequest{Name: "q"})
				err = armadaclient.Describe(err)
			}
			if err != nil {
				got = err.Error()
			}
			if tc.err == "" && got != "" || !strings.Contains(got, tc.err) {
				t.Errorf("%s\nDial + GetQueue: want error containing %q, got %q", tc.reason, tc.err, got)
			}
		})
	}
}

func TestBasicAuthHeader(t *testing.T) {
	// The header must be what Armada's own basic-auth client sends, which
	// Armada's server parses: "basic base64(username:password)".
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s, err := armadatest.Start(context.Background(), armadatest.Options{Users: map[string]armadatest.User{"u": {Password: "p:w"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data:       map[string][]byte{"username": []byte("u"), "password": []byte("p:w")},
	}).Build()
	conn, err := armadaclient.Dial(context.Background(), kube, armadaclient.Config{Namespace: "ns", Spec: armadav1.ProviderConfigSpec{
		Endpoint: s.Address(), TLS: armadav1.TLS{Insecure: true},
		Credentials: armadav1.Credentials{Source: armadav1.CredentialsBasic, Basic: &armadav1.BasicAuth{
			UsernameSecretRef: selector("", "username"), PasswordSecretRef: selector("", "password"),
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = conn.Queues.GetQueue(context.Background(), &api.QueueGetRequest{Name: "absent"})
	if d := cmp.Diff("not found: error: could not find queue \"absent\"", armadaclient.Describe(err).Error()); d != "" {
		t.Errorf("GetQueue as a user whose password holds a colon: -want, +got:\n%s", d)
	}
}

func TestTokenSourcesShared(t *testing.T) {
	// Connections made with the same client credentials and one
	// TokenSources fetch one token between them.
	ctx := context.Background()
	var issued atomic.Int32
	tokenURL := tokenServer(t, &issued)
	s, err := armadatest.Start(ctx, armadatest.Options{Tokens: map[string]string{"oidc-token": "provider"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data:       map[string][]byte{"client-secret": []byte("client-secret")},
	}).Build()
	cfg := armadaclient.Config{Namespace: "ns", Tokens: &armadaclient.TokenSources{}, Spec: armadav1.ProviderConfigSpec{
		Endpoint: s.Address(), TLS: armadav1.TLS{Insecure: true},
		Credentials: armadav1.Credentials{Source: armadav1.CredentialsOIDCClientCredentials, OIDCClientCredentials: &armadav1.OIDCClientCredentials{
			TokenURL: tokenURL, ClientID: "provider", ClientSecretSecretRef: selector("", "client-secret"),
		}},
	}}
	for range 3 {
		conn, err := armadaclient.Dial(ctx, kube, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Queues.GetQueue(ctx, &api.QueueGetRequest{Name: "absent"})
		if !armadaclient.IsNotFound(armadaclient.Describe(err)) {
			t.Errorf("GetQueue: want NotFound, got %v", err)
		}
		_ = conn.Close()
	}
	if got := issued.Load(); got != 1 {
		t.Errorf("three connections fetched %d tokens, want 1", got)
	}
}
