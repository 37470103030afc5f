package conformance

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/executorapi"
	"github.com/gogo/protobuf/types"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	_ "google.golang.org/grpc/encoding/gzip" // Armada's executor compresses its calls with gzip.
)

// privateCA is a certificate authority the test makes up: nothing on the
// machine trusts it, so a client accepts a certificate it signs only if it
// is told to trust it.
type privateCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, as a user puts it in spec.executorApi.caSecretRef.
	PEM []byte
}

func newPrivateCA(t *testing.T) *privateCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "armada-crossplane conformance private CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("cannot create the CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &privateCA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// ServerCert issues a serving certificate for host, which is not a CA.
func (ca *privateCA) ServerCert(t *testing.T, host string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{host},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("cannot create the server certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("cannot generate a key: %v", err)
	}
	return key
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatalf("cannot generate a serial number: %v", err)
	}
	return n
}

// basicUser is one user of a scheduler's auth.basicAuth.users.
type basicUser struct {
	Password string
	Groups   []string
}

// SchedulerAuth is what decides, in Armada's scheduler, who may call the
// executor API: its basic-auth users and the groups
// permissionGroupMapping grants execute_jobs.
type SchedulerAuth struct {
	Users       map[string]basicUser
	ExecuteJobs []string
}

// EveryoneGroup is the group Armada puts every authenticated principal in
// (internal/common/auth/common.go, EveryoneGroup).
const EveryoneGroup = "everyone"

// schedulerAuthOf reads a scheduler's effective auth: the users every
// loaded config file names, each with its password as the scheduler sees
// it (the rendered environment over the files) and its groups, and the
// execute_jobs grants.
func schedulerAuthOf(rn *Run) (SchedulerAuth, error) {
	a := SchedulerAuth{Users: map[string]basicUser{}}
	for _, m := range append([]map[string]any{rn.Cfg.Base}, rn.Cfg.Overrides...) {
		users, _ := lookup(m, "auth.basicAuth.users")
		um, _ := users.(map[string]any)
		for name := range um {
			key := "auth.basicAuth.users." + name
			password, _ := rn.Effective(key + ".password")
			groups, _ := rn.Cfg.Get(key + ".groups")
			a.Users[name] = basicUser{Password: password, Groups: stringList(groups)}
		}
	}
	if len(a.Users) == 0 {
		return a, errors.Errorf("%s sets no auth.basicAuth.users", rn.ID())
	}
	grants, _ := rn.Cfg.Get("auth.permissionGroupMapping.execute_jobs")
	a.ExecuteJobs = stringList(grants)
	return a, nil
}

// stringList is a YAML list of strings; anything else is empty.
func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// principal is an authenticated caller.
type principal struct {
	Name   string
	Groups []string
}

// authenticate does what the scheduler's gRPC auth middleware does with
// only basic auth configured (internal/common/auth: MultiAuthService over
// BasicAuthService): no basic "authorization" header is Unauthenticated
// with "could not be authenticated with any of the supported schemes", a
// bad header or an unknown user or wrong password is Unauthenticated with
// "invalid credentials". Armada's own code is under internal/ and cannot be
// imported, so this is a minimal re-implementation.
func (a SchedulerAuth) authenticate(ctx context.Context) (principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	header := ""
	if v := md.Get("authorization"); len(v) > 0 {
		header = v[0]
	}
	scheme, payload, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return principal{}, status.Error(codes.Unauthenticated,
			"Request could not be authenticated: Request could not be authenticated with any of the supported schemes.")
	}
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return principal{}, status.Errorf(codes.Unauthenticated, "invalid credentials (Basic): %v", err)
	}
	name, password, _ := strings.Cut(string(b), ":")
	u, ok := a.Users[name]
	if !ok || u.Password != password {
		// The name is returned only for the test's record.
		return principal{Name: name}, status.Errorf(codes.Unauthenticated, "invalid credentials for user %q (Basic)", name)
	}
	return principal{Name: name, Groups: append(slices.Clone(u.Groups), EveryoneGroup)}, nil
}

// authorize does what ExecutorApi.authorize (internal/scheduler/api.go)
// does: execute_jobs is granted through permissionGroupMapping, and a
// principal without it is PermissionDenied.
func (a SchedulerAuth) authorize(p principal) error {
	for _, g := range p.Groups {
		if slices.Contains(a.ExecuteJobs, g) {
			return nil
		}
	}
	return status.Errorf(codes.PermissionDenied, "user %s does not have permission to perform execute_jobs action", p.Name)
}

// APICall is one call the executor API answered.
type APICall struct {
	Method     string
	User       string
	ExecutorID string
	Pool       string
	Code       codes.Code
	Err        string
}

// executorAPI stands in for the scheduler's executor API: Armada's own
// generated ExecutorApi service, served over TLS with a certificate of a
// private CA, authenticating and authorizing every call as the scheduler
// would with the auth it is given. It leases no jobs: LeaseJobRuns answers
// with the end marker only.
type executorAPI struct {
	executorapi.UnimplementedExecutorApiServer

	Addr string

	mu         sync.Mutex
	auth       SchedulerAuth
	calls      []APICall
	handshakes []string
}

// startExecutorAPI serves the executor API on a loopback port with cert.
func startExecutorAPI(t *testing.T, cert tls.Certificate, auth SchedulerAuth) *executorAPI {
	t.Helper()
	s := &executorAPI{auth: auth}
	creds := &recordingCreds{TransportCredentials: credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), api: s}
	srv := grpc.NewServer(grpc.Creds(creds))
	executorapi.RegisterExecutorApiServer(srv, s)
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = lis.Addr().String()
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s
}

// SetAuth replaces the auth the API checks calls against.
func (s *executorAPI) SetAuth(a SchedulerAuth) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = a
}

// Calls returns the calls answered so far.
func (s *executorAPI) Calls() []APICall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Handshakes returns the outcome of every TLS handshake so far: "" for a
// successful one, else its error.
func (s *executorAPI) Handshakes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.handshakes)
}

func (s *executorAPI) record(c *APICall, err error) {
	c.Code = status.Code(err)
	if err != nil {
		c.Err = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, *c)
}

// CurrentAuth is the auth the API checks calls against now.
func (s *executorAPI) CurrentAuth() SchedulerAuth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// LeaseJobRuns authenticates the caller (the scheduler's interceptor does
// so before the handler), receives the lease request, authorizes, and
// ends the stream with no leases.
func (s *executorAPI) LeaseJobRuns(stream executorapi.ExecutorApi_LeaseJobRunsServer) (err error) {
	c := &APICall{Method: "LeaseJobRuns"}
	defer func() { s.record(c, err) }()
	auth := s.CurrentAuth()
	p, err := auth.authenticate(stream.Context())
	c.User = p.Name
	if err != nil {
		return err
	}
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	c.ExecutorID, c.Pool = req.GetExecutorId(), req.GetPool()
	if err := auth.authorize(p); err != nil {
		return err
	}
	return stream.Send(&executorapi.LeaseStreamMessage{Event: &executorapi.LeaseStreamMessage_End{End: &executorapi.EndMarker{}}})
}

// ReportEvents authenticates and authorizes the caller and drops the
// events.
func (s *executorAPI) ReportEvents(ctx context.Context, _ *executorapi.EventList) (_ *types.Empty, err error) {
	c := &APICall{Method: "ReportEvents"}
	defer func() { s.record(c, err) }()
	auth := s.CurrentAuth()
	p, err := auth.authenticate(ctx)
	c.User = p.Name
	if err != nil {
		return nil, err
	}
	if err := auth.authorize(p); err != nil {
		return nil, err
	}
	return &types.Empty{}, nil
}

// recordingCreds records the outcome of every server-side TLS handshake.
type recordingCreds struct {
	credentials.TransportCredentials
	api *executorAPI
}

func (c *recordingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.api.mu.Lock()
	c.api.handshakes = append(c.api.handshakes, msg)
	c.api.mu.Unlock()
	return out, info, err
}

// connectProxy is an HTTP CONNECT proxy that tunnels each CONNECT by its
// authority (host:port, as the client names it) to the address its route
// gives, refuses authorities without a route as an unresolvable name
// would, and records the authority each CONNECT asked for. A route for
// anyAuthority tunnels every CONNECT. Armada's
// gRPC client honours HTTPS_PROXY, so an executor told to use it dials the
// rendered armadaUrl unchanged, by name, while the bytes reach the test's
// executor API: the TLS handshake is verified against the rendered host.
type connectProxy struct {
	URL string

	mu        sync.Mutex
	requested []string
}

func startConnectProxy(t *testing.T, routes map[string]string) *connectProxy {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{URL: "http://" + lis.Addr().String()}
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go p.tunnel(conn, routes)
		}
	}()
	t.Cleanup(func() { _ = lis.Close() })
	return p
}

// anyAuthority is the route for every authority.
const anyAuthority = "*"

func (p *connectProxy) tunnel(conn net.Conn, routes map[string]string) {
	defer func() { _ = conn.Close() }()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.requested = append(p.requested, req.Method+" "+req.Host)
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	target, ok := ownPort(req.Host)
	if !ok {
		target, ok = routes[req.Host]
	}
	if !ok {
		target, ok = routes[anyAuthority]
	}
	if !ok {
		_, _ = io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\n\r\n")
		return
	}
	up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", target)
	if err != nil {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer func() { _ = up.Close() }()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	go func() { _, _ = io.Copy(up, br) }()
	_, _ = io.Copy(conn, up)
}

// ownPort is where a process dialing its own port with no host (":port",
// as Armada's REST gateway dials its gRPC port) connects: loopback. In the
// pod no proxy is set and ":port" is the pod's own; under the test's
// HTTPS_PROXY a gRPC client sends even that to the proxy (Go's proxy rules
// exempt only "localhost" and loopback addresses, not an empty host).
func ownPort(authority string) (string, bool) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil || host != "" || port == "" {
		return "", false
	}
	return net.JoinHostPort("127.0.0.1", port), true
}

// Requested returns what every proxied request asked for, e.g.
// "CONNECT host:443".
func (p *connectProxy) Requested() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requested)
}
