package jobflow

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// The OpenID Provider people sign in to Lookout through, in
// TestLookoutUIOIDC and make run: zitadel/oidc's example provider
// (tools/oidc), outside the cluster as a company's login service is,
// reached at LoginIssuer's host on port 443 through a relay.
const (
	// LoginHost is the provider's host name; LoginAddr is where relying
	// parties reach it, to relay to the provider's address; LoginIssuer
	// is its issuer.
	LoginHost   = "login.oidc.test"
	LoginAddr   = LoginHost + ":443"
	LoginIssuer = "https://" + LoginHost
	// LoginClient is the client ID the claim names and the provider
	// registers: a public browser app.
	LoginClient = "lookout"
	// LoginCASecret holds the provider's CA under LoginCAKey, in the
	// claim's namespace: spec.auth.oidc.caSecretRef.
	LoginCASecret = "login-ca"
	LoginCAKey    = "ca.crt"
)

// LoginAuth is spec.auth.oidc for the provider.
func LoginAuth() map[string]any {
	return map[string]any{
		"providerUrl": LoginIssuer, "clientId": LoginClient,
		"caSecretRef": map[string]any{"name": LoginCASecret, "key": LoginCAKey},
	}
}

// StartLogin starts the provider for a Lookout at lookoutURL (its
// redirect URI is lookoutURL/oidc), every access token naming groups. It
// stops when t ends; the caller relays LoginAddr to its Addr.
func StartLogin(t TB, lookoutURL string, groups []string) *testenv.OIDC {
	t.Helper()
	return testenv.StartOIDC(t, testenv.OIDCOptions{
		Issuer: LoginIssuer, ClientID: LoginClient, RedirectURIs: []string{lookoutURL + "/oidc"}, Groups: groups,
	})
}

// TrustLogin lets a browser with o reach the provider: its host name
// resolves to its relay in names, and the certificate it serves there,
// verified against its CA, is trusted.
func TrustLogin(ctx context.Context, o *browser.Options, names *podrun.Names, idp *testenv.OIDC) error {
	ip, ok := names.Lookup(LoginHost)
	if !ok {
		return errors.Errorf("no relay for the OpenID Provider %s", LoginHost)
	}
	spki, err := browser.SPKIOf(ctx, names.Dial, LoginAddr, LoginHost, idp.CA)
	if err != nil {
		return err
	}
	if o.Hosts == nil {
		o.Hosts = map[string]string{}
	}
	o.Hosts[LoginHost] = ip
	o.SPKIs = append(o.SPKIs, spki)
	return nil
}
