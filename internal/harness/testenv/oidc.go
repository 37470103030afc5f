package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// OIDCVersion is the github.com/zitadel/oidc/v3 release tools/oidc builds
// its OpenID Provider from.
const OIDCVersion = "v3.52.0"

// OIDCOptions configure an OpenID Provider.
type OIDCOptions struct {
	// Issuer is the issuer URL, https://HOST with no path: relying
	// parties reach HOST:443 through a relay to Addr.
	Issuer string
	// ClientID is the one public browser client; RedirectURIs are its
	// redirect URIs.
	ClientID     string
	RedirectURIs []string
	// Groups are the groups every access token names (claim "groups").
	Groups []string
}

// OIDC is a private OpenID Provider: zitadel/oidc's example provider
// (tools/oidc) over TLS on 127.0.0.1, with one user.
type OIDC struct {
	// Addr is where it listens (127.0.0.1:port).
	Addr string
	// CA is its certificate, self-signed for the issuer's host (PEM).
	CA []byte
	// Username and Password are its user's.
	Username, Password string

	log string
}

// StartOIDC starts the provider tools/oidc builds, and stops it when the
// test ends. It fails the test if the binary `make oidc` builds is
// missing.
func StartOIDC(tb TB, o OIDCOptions) *OIDC {
	tb.Helper()
	bin := ToolBin(tb, "oidc", OIDCVersion)
	dir := tb.TempDir()
	host := strings.TrimPrefix(o.Issuer, "https://")
	cert, key := SelfSignedCertFor(tb, host)
	p := &OIDC{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb))), CA: cert,
		Username: "alice", Password: RandomPassword(tb), log: filepath.Join(dir, "oidc.log"),
	}
	users, err := json.Marshal(map[string]any{"u1": map[string]any{
		"ID": "u1", "Username": p.Username, "Password": p.Password,
		"FirstName": "Alice", "LastName": "Tester", "Email": "alice@" + host, "EmailVerified": true,
	}})
	if err != nil {
		tb.Fatal(errors.Wrap(err, "cannot encode the users"))
	}
	files := map[string][]byte{"tls.crt": cert, "tls.key": key, "users.json": users}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			tb.Fatal(errors.Wrapf(err, "cannot write %s", name))
		}
	}
	logf, err := os.Create(p.log)
	if err != nil {
		tb.Fatal(errors.Wrap(err, "cannot create the provider's log"))
	}
	cmd := exec.CommandContext(tb.Context(), bin, "-issuer", o.Issuer, "-listen", p.Addr,
		"-cert", filepath.Join(dir, "tls.crt"), "-key", filepath.Join(dir, "tls.key"),
		"-client-id", o.ClientID, "-redirect-uri", strings.Join(o.RedirectURIs, ","),
		"-users", filepath.Join(dir, "users.json"), "-groups", strings.Join(o.Groups, ","))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ProcessGroupAttr()
	exited, err := startInGroup(tb, cmd, logf)
	if err != nil {
		tb.Fatal(errors.Wrap(err, "cannot run the OpenID Provider"))
	}
	// Ready when its discovery document answers, for the issuer's host.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, p.Addr)
		},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.Issuer+"/.well-known/openid-configuration", http.NoBody)
		rsp, err := hc.Do(req)
		cancel()
		if err == nil {
			_ = rsp.Body.Close()
			if rsp.StatusCode == http.StatusOK {
				return p
			}
			err = errors.Errorf("discovery answered %s", rsp.Status)
		}
		select {
		case <-exited:
			tb.Fatalf("the OpenID Provider exited; log:\n%s", p.Log())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the OpenID Provider did not answer (last error: %v); log:\n%s", err, p.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Log returns the provider's log output.
func (p *OIDC) Log() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(cannot read the provider's log: " + err.Error() + ")"
	}
	return string(b)
}
