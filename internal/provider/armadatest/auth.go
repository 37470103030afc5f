package armadatest

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// authenticate is a unary interceptor that counts the call, authenticates
// the caller from the "authorization" metadata as Armada does (basic auth,
// then bearer tokens, then anonymous) and refuses denied users.
func (s *Server) authenticate(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	s.count(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:])
	p, err := s.principal(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	denied := s.denied[p.name]
	s.mu.Unlock()
	if denied {
		return nil, status.Errorf(codes.PermissionDenied, "user %q is denied by armadatest", p.name)
	}
	return h(context.WithValue(ctx, ctxKey{}, p), req)
}

// principal authenticates the caller.
func (s *Server) principal(ctx context.Context) (principal, error) {
	var header string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			header = v[0]
		}
	}
	scheme, payload, _ := strings.Cut(header, " ")
	switch {
	case strings.EqualFold(scheme, "basic"):
		raw, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return principal{}, status.Error(codes.Unauthenticated, "malformed basic auth header")
		}
		name, password, _ := strings.Cut(string(raw), ":")
		u, ok := s.opts.Users[name]
		if !ok || u.Password != password {
			return principal{}, status.Errorf(codes.Unauthenticated, "invalid credentials for user %q", name)
		}
		return s.newPrincipal(name), nil
	case strings.EqualFold(scheme, "bearer"):
		name, ok := s.opts.Tokens[payload]
		if !ok {
			return principal{}, status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		return s.newPrincipal(name), nil
	case header == "" && s.opts.Anonymous:
		return principal{name: "anonymous", groups: []string{EveryoneGroup}}, nil
	}
	return principal{}, status.Error(codes.Unauthenticated, "request could not be authenticated with any of the supported schemes")
}

// newPrincipal returns the named user with its groups and "everyone".
func (s *Server) newPrincipal(name string) principal {
	return principal{name: name, groups: append(slices.Clone(s.opts.Users[name].Groups), EveryoneGroup)}
}

// authorize fails with PermissionDenied unless p holds permission perm
// through one of its groups.
func (s *Server) authorize(p principal, perm Permission) error {
	for _, g := range s.opts.PermissionGroups[perm] {
		if slices.Contains(p.groups, g) {
			return nil
		}
	}
	return status.Errorf(codes.PermissionDenied, "user %q lacks permission %s", p.name, perm)
}
