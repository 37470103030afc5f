package conformance

import (
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// oidcProvider stands in for an OpenID Connect provider (Keycloak, Dex,
// a cloud IdP) at the rendered auth.openIdAuth.providerUrl. It serves the
// discovery document and the signing keys over HTTPS, with a certificate
// for the provider's host issued by a private CA.
//
// What is real and what stands in: Armada's own binaries call
// oidc.NewProvider on the rendered URL, unchanged, and must accept the
// document (go-oidc requires its issuer to equal that URL byte for byte)
// before they go on to serve, so a component that becomes healthy has
// proven its OIDC wiring. The name is not resolved by DNS: each component
// gets HTTPS_PROXY naming its own CONNECT proxy (see routedEnv), which
// tunnels the provider's authority to this server. The private CA stands in for the public
// roots a real provider's certificate chains to: it reaches the process
// through SSL_CERT_FILE, which the rendered container does not set for
// OIDC.
type oidcProvider struct {
	// Issuer is the rendered providerUrl.
	Issuer string
	// Authority is the host:port the components must CONNECT to.
	Authority string
	// CAFile holds the private CA's certificate.
	CAFile string

	addr string
	key  *ecdsa.PrivateKey

	mu     sync.Mutex
	served []string
}

// startOIDC starts the provider every run with an OIDC provider
// configures, or returns nil if none does. An example configures one
// provider for all its components.
func startOIDC(t *testing.T, runs []*Run) *oidcProvider {
	t.Helper()
	var issuers []string
	for _, rn := range runs {
		if u, _ := rn.Effective("auth.openIdAuth.providerUrl"); u != "" && !slices.Contains(issuers, u) {
			issuers = append(issuers, u)
		}
	}
	switch len(issuers) {
	case 0:
		return nil
	case 1:
	default:
		t.Fatalf("the rendered components name %d OIDC providers %q; an Armada has one", len(issuers), issuers)
	}
	u, err := url.Parse(issuers[0])
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		t.Fatalf("rendered auth.openIdAuth.providerUrl %q is not an https URL with a host", issuers[0])
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	ca := newPrivateCA(t)
	p := &oidcProvider{Issuer: issuers[0], Authority: net.JoinHostPort(u.Hostname(), port), key: newKey(t)}
	p.CAFile = filepath.Join(t.TempDir(), "oidc-ca.crt")
	if err := os.WriteFile(p.CAFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = lis.Addr().String()
	srv := &http.Server{
		Handler:           p,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t, u.Hostname())}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.ServeTLS(lis, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// discoveryPath and keysPath are where the provider serves its discovery
// document and its keys (Keycloak's layout).
func (p *oidcProvider) discoveryPath() string {
	u, _ := url.Parse(p.Issuer)
	return strings.TrimSuffix(u.Path, "/") + "/.well-known/openid-configuration"
}

func (p *oidcProvider) keysURL() string {
	return strings.TrimSuffix(p.Issuer, "/") + "/protocol/openid-connect/certs"
}

func (p *oidcProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.served = append(p.served, r.Method+" "+r.URL.Path)
	p.mu.Unlock()
	keys, _ := url.Parse(p.keysURL())
	switch r.URL.Path {
	case p.discoveryPath():
		writeJSON(w, map[string]any{
			"issuer":                                p.Issuer,
			"authorization_endpoint":                strings.TrimSuffix(p.Issuer, "/") + "/protocol/openid-connect/auth",
			"token_endpoint":                        strings.TrimSuffix(p.Issuer, "/") + "/protocol/openid-connect/token",
			"jwks_uri":                              p.keysURL(),
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	case keys.Path:
		// PublicKey.Bytes is the uncompressed point 0x04 || X || Y.
		pub, err := p.key.PublicKey.Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		x, y := pub[1:33], pub[33:]
		writeJSON(w, map[string]any{"keys": []map[string]string{{
			"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "conformance",
			"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y),
		}}})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Served reports whether the provider served its discovery document.
func (p *oidcProvider) Served() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.served)
}

// uses reports whether a run configures the provider.
func (p *oidcProvider) uses(rn *Run) bool {
	u, _ := rn.Effective("auth.openIdAuth.providerUrl")
	return p != nil && u != ""
}

// Route is the proxy route to the provider for a run that configures it.
func (p *oidcProvider) Route(rn *Run, routes map[string]string) {
	if p.uses(rn) {
		routes[p.Authority] = p.addr
	}
}

// Env is the private CA, for a run that configures the provider.
func (p *oidcProvider) Env(rn *Run) []podrun.EnvVar {
	if !p.uses(rn) {
		return nil
	}
	file := p.CAFile
	if rendered, ok := rn.Inv.Lookup("SSL_CERT_FILE"); ok {
		// The component trusts a rendered CA too (spec.tls): Go reads one
		// SSL_CERT_FILE, so both go into one bundle.
		if bundle, err := p.bundle(podrun.NewRewriter(rn.Inv.Mounts).Rewrite(rendered)); err == nil {
			file = bundle
		}
	}
	return []podrun.EnvVar{{Name: "SSL_CERT_FILE", Value: file}}
}

// bundle writes the rendered CA file's certificates and the provider's CA
// into one file beside the provider's CA and returns its path.
func (p *oidcProvider) bundle(rendered string) (string, error) {
	a, err := os.ReadFile(rendered) //nolint:gosec // A file the test wrote from the render.
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p.CAFile)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(p.CAFile), "ca-bundle-*.crt")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	_, err = f.Write(append(append(a, '\n'), b...))
	return f.Name(), err
}

// checkOIDC fails unless a component that started with the provider asked
// its proxy for the provider's authority and the provider served the
// discovery document at the rendered issuer's path within timeout. A
// Component that got past auth setup without either never used the
// rendered provider.
func checkOIDC(o *outcome, p *oidcProvider, rn *Run, proxy *connectProxy, timeout time.Duration) {
	if !p.uses(rn) {
		return
	}
	connect, get := "CONNECT "+p.Authority, "GET "+p.discoveryPath()
	deadline := time.Now().Add(timeout)
	for !slices.Contains(proxy.Requested(), connect) || !slices.Contains(p.Served(), get) {
		if time.Now().After(deadline) {
			o.errorf("did not fetch the discovery document of its OIDC provider within %s (its proxy saw %q; the provider served %q)",
				timeout, proxy.Requested(), p.Served())
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.Notes = append(o.Notes, "fetched the discovery document of "+p.Issuer+" over TLS and went on to serve")
}
