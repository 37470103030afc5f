// Command oidc serves zitadel/oidc's example OpenID Provider
// (github.com/zitadel/oidc/v3/example/server: its OpenID Provider, its
// in-memory storage and its login page) over TLS, for one public browser
// client: the authorization code flow with PKCE, as Lookout's UI signs in,
// with JSON Web Token access tokens (Armada verifies a bearer token as a
// JWT whose audience is the client), each carrying the groups claim
// "groups". The browser test of Lookout's OIDC login logs in through its
// login page.
//
// Usage:
//
//	oidc -issuer https://login.example.test -listen 127.0.0.1:8443 \
//	  -cert tls.crt -key tls.key -client-id lookout \
//	  -redirect-uri https://lookout.example.test/oidc \
//	  -users users.json -groups armada-admins
//
// users.json is the example's users file: a map of user IDs to users
// ({"id1": {"ID": "id1", "Username": "alice", "Password": "..."}}).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oidc:", err)
		os.Exit(1)
	}
}

func run() error {
	issuer := flag.String("issuer", "", "the issuer URL (https://...), exactly as relying parties name it")
	listen := flag.String("listen", "127.0.0.1:0", "the address to serve on")
	cert := flag.String("cert", "", "the TLS certificate (PEM)")
	key := flag.String("key", "", "the TLS key (PEM)")
	clientID := flag.String("client-id", "", "the public browser client's ID")
	redirects := flag.String("redirect-uri", "", "the client's redirect URIs, comma-separated")
	users := flag.String("users", "", "the users file (the example's JSON format)")
	groups := flag.String("groups", "", "the groups every user's access token names in its groups claim, comma-separated")
	flag.Parse()
	for name, v := range map[string]string{"issuer": *issuer, "cert": *cert, "key": *key, "client-id": *clientID, "redirect-uri": *redirects, "users": *users} {
		if v == "" {
			return fmt.Errorf("-%s is required", name)
		}
	}
	us, err := storage.StoreFromFile(*users)
	if err != nil {
		return fmt.Errorf("cannot read the users: %w", err)
	}
	storage.RegisterClients(storage.NativeClient(*clientID, strings.Split(*redirects, ",")...))
	st := &store{Storage: storage.NewStorage(us), groups: strings.Split(*groups, ",")}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	router := exampleop.SetupServer(*issuer, st, logger, false)
	// The login page has no icon; a browser asks for one, and a 404 would
	// show as a failed request on the page.
	router.Get("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	srv := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("serving", "issuer", *issuer, "addr", lis.Addr().String())
	if err := srv.ServeTLS(lis, *cert, *key); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// store is the example's storage with the one client a browser app
// is, and the groups claim in every access token.
type store struct {
	*storage.Storage

	groups []string
}

// GetClientByClientID returns the example's native client as a browser
// (user agent) app with JWT access tokens: a public client with PKCE whose
// redirect URIs are https:// pages.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return browserClient{c}, nil
}

// GetPrivateClaimsFromScopes adds the groups claim to the example's
// claims of an access token.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	claims["groups"] = s.groups
	return claims, nil
}

type browserClient struct{ op.Client }

func (browserClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeUserAgent }
func (browserClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
