// Package armadatest is an in-memory Armada queue service on a loopback
// gRPC listener, for tests, benchmarks and demos of provider-armada.
//
// It serves Armada's generated QueueService with Armada's own queue model
// (github.com/armadaproject/armada/pkg/client/queue): a queue is validated
// and stored exactly as the real server stores it, so owners come back
// folded into the first permission, a priority factor below 1 is rejected
// with InvalidArgument, and so on. It enforces basic auth (Armada's
// "authorization: basic ..." metadata) or bearer tokens, and Armada's
// create_queue and delete_queue permissions, mapped to groups as in
// Armada's permissionGroupMapping.
//
// Faults: Stop and Start take the listener down and bring it back on the
// same address (clients see Unavailable in between); Deny makes every call
// by one user fail with PermissionDenied.
package armadatest

import (
	"context"
	"crypto/tls"
	"maps"
	"net"
	"sort"
	"sync"

	"github.com/armadaproject/armada/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Permission is one of Armada's global permissions.
type Permission string

// The permissions the queue service checks.
const (
	CreateQueue Permission = "create_queue"
	DeleteQueue Permission = "delete_queue"
)

// EveryoneGroup is the group Armada puts every authenticated principal in.
const EveryoneGroup = "everyone"

// A User is a basic-auth user.
type User struct {
	// Password the user authenticates with.
	Password string
	// Groups the user is in, besides "everyone".
	Groups []string
}

// Options configure a Server.
type Options struct {
	// Users are the basic-auth users, by name.
	Users map[string]User
	// Tokens map a bearer token to the user it authenticates. The user
	// needs no entry in Users; its groups are taken from there if present.
	Tokens map[string]string
	// Anonymous accepts calls without credentials, as principal
	// "anonymous".
	Anonymous bool
	// PermissionGroups map a permission to the groups granted it, as
	// Armada's permissionGroupMapping. Nil grants create_queue and
	// delete_queue to "everyone".
	PermissionGroups map[Permission][]string
	// Address to listen on. Empty means a free port on 127.0.0.1.
	Address string
	// TLS, if set, serves TLS with this config instead of plaintext.
	TLS *tls.Config
}

// A Server is a running in-memory Armada queue service.
type Server struct {
	opts Options
	addr string

	mu     sync.Mutex
	queues map[string]*api.Queue
	denied map[string]bool
	calls  map[string]int
	grpc   *grpc.Server
	lis    net.Listener
}

// Start serves a new, empty queue service. ctx bounds only the setup of
// the listener. Close the server when done.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.PermissionGroups == nil {
		o.PermissionGroups = map[Permission][]string{
			CreateQueue: {EveryoneGroup},
			DeleteQueue: {EveryoneGroup},
		}
	}
	if o.Address == "" {
		o.Address = "127.0.0.1:0"
	}
	s := &Server{opts: o, queues: map[string]*api.Queue{}, denied: map[string]bool{}, calls: map[string]int{}}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Address)
	if err != nil {
		return nil, errors.Wrap(err, "cannot listen")
	}
	s.addr = lis.Addr().String()
	s.serve(lis)
	return s, nil
}

// serve starts a gRPC server on lis. The caller must not hold s.mu.
func (s *Server) serve(lis net.Listener) {
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.authenticate)}
	if s.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	g := grpc.NewServer(opts...)
	api.RegisterQueueServiceServer(g, &queueService{s: s})
	s.mu.Lock()
	s.grpc, s.lis = g, lis
	s.mu.Unlock()
	go func() { _ = g.Serve(lis) }()
}

// Address is the host:port the server listens on; it survives Stop and
// Start.
func (s *Server) Address() string { return s.addr }

// Stop closes the listener and every connection, as if Armada went down.
// Queues are kept. Stop on a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.grpc
	s.grpc, s.lis = nil, nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Start listens again on the same address after Stop. It does nothing on
// a running server. ctx bounds only the setup of the listener.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	running := s.grpc != nil
	s.mu.Unlock()
	if running {
		return nil
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return errors.Wrapf(err, "cannot listen on %s again", s.addr)
	}
	s.serve(lis)
	return nil
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }

// Deny makes every call by user fail with PermissionDenied, or, with deny
// false, lifts that.
func (s *Server) Deny(user string, deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[user] = deny
}

// Queue returns a copy of the named queue as Armada would report it, and
// whether it exists.
func (s *Server) Queue(name string) (*api.Queue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return nil, false
	}
	return cloneQueue(q), true
}

// SetQueue stores q as is, bypassing validation and permissions: an edit
// made behind the provider's back.
func (s *Server) SetQueue(q *api.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[q.GetName()] = cloneQueue(q)
}

// RemoveQueue deletes the named queue, bypassing permissions.
func (s *Server) RemoveQueue(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.queues, name)
}

// QueueNames returns the names of every queue, sorted.
func (s *Server) QueueNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.queues))
	for n := range s.queues {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Calls returns how many times each method (such as "CreateQueue") was
// called, including calls that failed.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	maps.Copy(out, s.calls)
	return out
}

// ResetCalls zeroes the call counts.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
}

// count records a call of method.
func (s *Server) count(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
}

// cloneQueue deep-copies a queue.
func cloneQueue(q *api.Queue) *api.Queue {
	b, err := q.Marshal()
	if err != nil {
		panic(err) // A valid in-memory message always marshals.
	}
	out := &api.Queue{}
	if err := out.Unmarshal(b); err != nil {
		panic(err)
	}
	return out
}

// ctxKey keys the principal in a call's context.
type ctxKey struct{}

// A principal is an authenticated caller.
type principal struct {
	name   string
	groups []string
}

// principalFrom returns the caller authenticated by s.authenticate.
func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(ctxKey{}).(principal)
	return p
}
