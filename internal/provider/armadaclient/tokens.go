package armadaclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TokenSources caches OAuth2 client-credentials token sources by their
// configuration (token URL, client ID, secret and scopes), so connections
// made with the same credentials share a token until it expires. A
// changed secret is a different configuration, so rotation takes effect
// on the next connection. The zero value is ready to use and safe for
// concurrent use.
type TokenSources struct {
	mu      sync.Mutex
	sources map[string]oauth2.TokenSource
}

// source returns the cached token source for cc, creating it if needed.
// A nil *TokenSources never caches.
func (t *TokenSources) source(ctx context.Context, cc *clientcredentials.Config) oauth2.TokenSource {
	// The token source fetches tokens after this reconcile's ctx is gone,
	// so it must not inherit its cancellation.
	ctx = context.WithoutCancel(ctx)
	if t == nil {
		return cc.TokenSource(ctx)
	}
	h := sha256.Sum256([]byte(strings.Join(append([]string{cc.TokenURL, cc.ClientID, cc.ClientSecret}, cc.Scopes...), "\x00")))
	key := hex.EncodeToString(h[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.sources[key]; ok {
		return s
	}
	if t.sources == nil {
		t.sources = map[string]oauth2.TokenSource{}
	}
	// clientcredentials' token source reuses a token until it expires.
	s := cc.TokenSource(ctx)
	t.sources[key] = s
	return s
}
