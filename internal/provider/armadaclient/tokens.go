package armadaclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A tokenSource returns a bearer token, bounded by the caller's context.
type tokenSource interface {
	Token(ctx context.Context) (*oauth2.Token, error)
}

// staticToken is a token read from a Secret.
type staticToken string

// Token returns the token.
func (s staticToken) Token(context.Context) (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: string(s)}, nil
}

// clientCredentials fetches a token with the OAuth2 client-credentials
// grant and reuses it until it expires. Each fetch is bounded both by the
// caller's context (the gRPC call's deadline) and by an HTTP client
// timeout, so a token endpoint that accepts and never answers cannot hold
// a reconcile: oauth2's own token sources use http.DefaultClient, which
// has no timeout, and a context fixed when the source was made.
type clientCredentials struct {
	cc      *clientcredentials.Config
	timeout time.Duration

	mu  sync.Mutex
	tok *oauth2.Token
}

// Token returns the cached token while it is valid, and otherwise fetches
// a new one.
func (c *clientCredentials) Token(ctx context.Context) (*oauth2.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Valid() {
		return c.tok, nil
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: c.timeout})
	tok, err := c.cc.Token(ctx)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot fetch a token from %s", c.cc.TokenURL)
	}
	c.tok = tok
	return tok, nil
}

// TokenSources caches OAuth2 client-credentials token sources by their
// configuration (token URL, client ID, secret, scopes and timeout), so
// connections made with the same credentials share a token until it
// expires. A changed secret is a different configuration, so rotation
// takes effect on the next connection. The zero value is ready to use and
// safe for concurrent use.
type TokenSources struct {
	mu      sync.Mutex
	sources map[string]*clientCredentials
}

// source returns the cached token source for cc, whose fetches time out
// after timeout, creating it if needed. A nil *TokenSources never caches.
func (t *TokenSources) source(cc *clientcredentials.Config, timeout time.Duration) tokenSource {
	if t == nil {
		return &clientCredentials{cc: cc, timeout: timeout}
	}
	h := sha256.Sum256([]byte(strings.Join(append([]string{cc.TokenURL, cc.ClientID, cc.ClientSecret, timeout.String()}, cc.Scopes...), "\x00")))
	key := hex.EncodeToString(h[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.sources[key]; ok {
		return s
	}
	if t.sources == nil {
		t.sources = map[string]*clientCredentials{}
	}
	s := &clientCredentials{cc: cc, timeout: timeout}
	t.sources[key] = s
	return s
}
