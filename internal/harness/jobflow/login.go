package jobflow

import (
	"context"
	"net/url"

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
	// LoginIssuer is the provider's issuer.
	LoginIssuer = "https://login.oidc.test"
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
// redirect URI is lookoutURL/oidc), every access token naming groups,
// and relays the issuer's host:443 to it through names. It stops when t
// ends.
func StartLogin(t TB, names *podrun.Names, lookoutURL string, groups []string) *testenv.OIDC {
	t.Helper()
	idp := testenv.StartOIDC(t, testenv.OIDCOptions{
		Issuer: LoginIssuer, ClientID: LoginClient, RedirectURIs: []string{lookoutURL + "/oidc"}, Groups: groups,
	})
	u, err := url.Parse(LoginIssuer)
	if err != nil {
		t.Fatal(errors.Wrap(err, "cannot parse the issuer"))
	}
	if err := names.Relay(u.Hostname()+":443", idp.Addr); err != nil {
		t.Fatal(err)
	}
	return idp
}

// TrustLogin lets a browser with o reach the provider: the issuer's name
// resolves to its relay in names, and the certificate it serves there,
// verified against its CA, is trusted.
func TrustLogin(ctx context.Context, o *browser.Options, names *podrun.Names, idp *testenv.OIDC) error {
	u, err := url.Parse(LoginIssuer)
	if err != nil {
		return errors.Wrap(err, "cannot parse the issuer")
	}
	ip, ok := names.Lookup(u.Hostname())
	if !ok {
		return errors.Errorf("no relay for the OpenID Provider %s", u.Hostname())
	}
	spki, err := browser.SPKIOf(ctx, names.Dial, u.Hostname()+":443", u.Hostname(), idp.CA)
	if err != nil {
		return err
	}
	if o.Hosts == nil {
		o.Hosts = map[string]string{}
	}
	o.Hosts[u.Hostname()] = ip
	o.SPKIs = append(o.SPKIs, spki)
	return nil
}
