package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/executorapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// tlsTimeout bounds how long the TLS check waits for the scheduler's gRPC
// port.
const tlsTimeout = 120 * time.Second

// StartScheduler starts the scheduler as rendered, against the example's
// real Pulsar broker, and waits for its gRPC port, which opens once
// Pulsar is up: its executor API then answers with Armada's own code,
// backed by the scheduler's database. It returns the process and the
// moved grpc.port.
func StartScheduler(t *testing.T, e *Env, svc *Services, free func() int, scheduler *Run) (*podrun.Process, int) {
	t.Helper()
	extra, moved := overrides(t, e, svc, free, scheduler)
	routed, _ := routedEnv(t, svc, scheduler)
	bin, args, err := scheduler.Command(e)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "scheduler.log")
	p, err := startProcess(t, bin, e.SourceDir, args, environ(scheduler, append(extra, routed...)), logPath)
	if err != nil {
		t.Fatal(err)
	}
	ShowTail(t, scheduler, p)
	grpcPort := moved["grpc.port"]
	if !podrun.Listening(grpcPort, tlsTimeout) {
		p.Stop()
		t.Fatalf("the scheduler's grpc.port %d is not listening", grpcPort)
	}
	return p, grpcPort
}

// MustHost is the host of a run's effective host:port key.
func MustHost(t *testing.T, rn *Run, key string) string {
	t.Helper()
	v, _ := rn.Effective(key)
	host, _, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		t.Fatalf("%s: %s is %q, not host:port", rn.ID(), key, v)
	}
	return host
}

// RootsOf is the CA pool a run trusts: the file its rendered SSL_CERT_FILE
// names, as its pod mounts it.
func RootsOf(t *testing.T, rn *Run) *x509.CertPool {
	t.Helper()
	f, ok := rn.Inv.Lookup("SSL_CERT_FILE")
	if !ok {
		t.Fatalf("%s has no SSL_CERT_FILE: Armada's client would trust only the system roots", rn.ID())
	}
	// The file as the pod mounts it, from the rendered volume.
	b, err := os.ReadFile(podrun.NewRewriter(rn.Inv.Mounts).Rewrite(f))
	if err != nil {
		t.Fatalf("%s: SSL_CERT_FILE: %v", rn.ID(), err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("%s: SSL_CERT_FILE %s holds no PEM certificate", rn.ID(), f)
	}
	return pool
}

// UnknownAuthority says whether err is a certificate verification failure
// for lack of the issuing CA.
func UnknownAuthority(err error) bool {
	return err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority")
}

// HTTPSGet GETs /health on a local port over TLS for host, trusting roots
// (the system's if nil). Any HTTP answer counts: the server's /health is
// 503 while Pulsar is down.
func HTTPSGet(t *testing.T, port int, roots *x509.CertPool, host string) error {
	t.Helper()
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/health", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// HTTPSProto GETs /health on a local port over TLS for host, trusting
// roots, offering HTTP/2 and HTTP/1.1 as a browser does, and returns the
// protocol the answer came over ("HTTP/1.1", "HTTP/2.0").
func HTTPSProto(t *testing.T, port int, roots *x509.CertPool, host string) (string, error) {
	t.Helper()
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	tr := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/health", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	return resp.Proto, resp.Body.Close()
}

// basicAuth is gRPC basic auth as Armada's client sends it.
type basicAuth struct{ user, password string }

func (b basicAuth) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "basic " + base64.StdEncoding.EncodeToString([]byte(b.user+":"+b.password))}, nil
}

func (basicAuth) RequireTransportSecurity() bool { return false }

// ReportEvents calls the executor API's ReportEvents with no events at
// addr, with creds, as the basic-auth user of rn's link.
func ReportEvents(t *testing.T, addr string, creds credentials.TransportCredentials, rn *Run, link string) (codes.Code, error) {
	t.Helper()
	user, _ := rn.Effective(link + ".basicAuth.username")
	password, _ := rn.Effective(link + ".basicAuth.password")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(basicAuth{user, password}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = executorapi.NewExecutorApiClient(conn).ReportEvents(ctx, &executorapi.EventList{})
	return status.Code(err), err
}

// PlainGet GETs /health on a local port in plain HTTP.
func PlainGet(t *testing.T, port int) (int, error) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/health", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, resp.Body.Close()
}

// LookoutServiceHost is the name in-cluster clients dial Lookout by: the
// endpoint's host when it is a Service name, else (an ingress serves
// Lookout at an external host, and the ingress controller terminates TLS
// with the user's own certificate) the name under Lookout's Service that
// the certificate its TLS sidecar serves holds (its --cert), read from
// the file the sidecar mounts.
func LookoutServiceHost(t *testing.T, lookout *Run, endpointHost string) string {
	t.Helper()
	if strings.HasSuffix(endpointHost, ".svc") {
		return endpointHost
	}
	var path string
	var mounts map[string]string
	for _, sc := range lookout.Sidecars {
		for _, a := range sc.Args {
			if p, ok := strings.CutPrefix(a, "--cert="); ok {
				path, mounts = p, sc.Inv.Mounts
			}
		}
	}
	if path == "" {
		t.Fatalf("%s: no TLS sidecar names a certificate (--cert=)", lookout.ID())
	}
	b, err := os.ReadFile(podrun.NewRewriter(mounts).Rewrite(path))
	if err != nil {
		t.Fatalf("%s: its sidecar's --cert %q: %v", lookout.ID(), path, err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: its sidecar's --cert %q holds no PEM certificate", lookout.ID(), path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: its sidecar's --cert %q: %v", lookout.ID(), path, err)
	}
	svc := lookout.Inv.Workload[strings.LastIndex(lookout.Inv.Workload, "/")+1:] + "."
	for _, n := range cert.DNSNames {
		if strings.HasPrefix(n, svc) && strings.HasSuffix(n, ".svc") {
			return n
		}
	}
	t.Fatalf("%s serves a certificate for %v, none of them its Service's in-cluster name %s<namespace>.svc", lookout.ID(), cert.DNSNames, svc)
	return ""
}
