package armadaclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"

	"github.com/armadaproject/armada/pkg/client/auth/basic"
	"golang.org/x/oauth2/clientcredentials"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// transportCredentials returns plaintext when the config says insecure,
// and otherwise TLS trusting the configured CA bundle or the system roots.
func transportCredentials(ctx context.Context, kube client.Reader, c Config) (credentials.TransportCredentials, error) {
	t := c.Spec.TLS
	if t.Insecure {
		return insecure.NewCredentials(), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CASecretRef != nil {
		pem, err := secretValue(ctx, kube, c, "spec.tls.caSecretRef", *t.CASecretRef)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("spec.tls.caSecretRef: no PEM certificate found")
		}
		cfg.RootCAs = pool
	}
	return credentials.NewTLS(cfg), nil
}

// perRPCCredentials returns the credentials sent with every call, or nil
// for source None. Basic auth uses Armada's own client type, so the header
// is exactly what armadactl sends ("authorization: basic base64(u:p)").
func perRPCCredentials(ctx context.Context, kube client.Reader, c Config) (credentials.PerRPCCredentials, error) {
	cr := c.Spec.Credentials
	secure := !c.Spec.TLS.Insecure
	switch cr.Source {
	case armadav1.CredentialsNone, "":
		return nil, nil
	case armadav1.CredentialsBasic:
		if cr.Basic == nil {
			return nil, errors.New("spec.credentials.basic is required for source Basic")
		}
		u, err := secretValue(ctx, kube, c, "spec.credentials.basic.usernameSecretRef", cr.Basic.UsernameSecretRef)
		if err != nil {
			return nil, err
		}
		p, err := secretValue(ctx, kube, c, "spec.credentials.basic.passwordSecretRef", cr.Basic.PasswordSecretRef)
		if err != nil {
			return nil, err
		}
		return &basic.LoginCredentials{Username: string(u), Password: string(p)}, nil
	case armadav1.CredentialsBearerToken:
		if cr.BearerToken == nil {
			return nil, errors.New("spec.credentials.bearerToken is required for source BearerToken")
		}
		tok, err := secretValue(ctx, kube, c, "spec.credentials.bearerToken.tokenSecretRef", cr.BearerToken.TokenSecretRef)
		if err != nil {
			return nil, err
		}
		return &bearer{source: staticToken(tok), secure: secure}, nil
	case armadav1.CredentialsOIDCClientCredentials:
		o := cr.OIDCClientCredentials
		if o == nil {
			return nil, errors.New("spec.credentials.oidcClientCredentials is required for source OIDCClientCredentials")
		}
		secret, err := secretValue(ctx, kube, c, "spec.credentials.oidcClientCredentials.clientSecretSecretRef", o.ClientSecretSecretRef)
		if err != nil {
			return nil, err
		}
		cc := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: string(secret), TokenURL: o.TokenURL, Scopes: o.Scopes}
		return &bearer{source: c.Tokens.source(cc, c.timeout()), secure: secure}, nil
	}
	return nil, errors.Errorf("spec.credentials.source %q is not supported", cr.Source)
}

// bearer sends "authorization: Bearer TOKEN", as Armada's OIDC clients do.
type bearer struct {
	source tokenSource
	secure bool
}

// GetRequestMetadata returns the authorization header. ctx is the gRPC
// call's, so its deadline bounds a token fetch.
func (b *bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	t, err := b.source.Token(ctx)
	if err != nil {
		return nil, errors.Wrap(err, "cannot get bearer token")
	}
	return map[string]string{"authorization": "Bearer " + t.AccessToken}, nil
}

// RequireTransportSecurity is true unless the config explicitly chose
// plaintext.
func (b *bearer) RequireTransportSecurity() bool { return b.secure }
