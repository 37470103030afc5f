package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/executorapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/armadaproject/armada-crossplane/internal/podrun"
)

// tlsTimeout bounds how long the TLS check waits for the scheduler's gRPC
// port.
const tlsTimeout = 120 * time.Second

// queuesLoaded is the scheduler's log line once it has loaded its queue
// cache from the server (internal/scheduler/queue).
var queuesLoaded = regexp.MustCompile(`Refreshed Queues in`)

// checkTLS proves, when the render turns TLS on, that Armada's own server
// and scheduler serve TLS with the certificates at the rendered paths, as
// the pods mount them from the rendered TLS Secret, and that clients
// trusting the rendered CA through the rendered SSL_CERT_FILE connect while
// clients without it are refused:
//
//   - the server binary serves its HTTP port with its certificate (Armada
//     serves HTTP and gRPC from the same grpc.tls keys): a client with the
//     scheduler's rendered trust accepts it for the name the scheduler
//     dials, one with the system roots is refused;
//   - the scheduler binary, as rendered, with the real Pulsar broker,
//     loads its queue cache from the server's API stand-in, which
//     serves the server's rendered certificate (armadaAPI), trusting the
//     CA through its rendered SSL_CERT_FILE, and serves gRPC over TLS: a
//     client with the server's (and the executor's) rendered trust,
//     address and credentials is authenticated and answered by Armada's
//     executor API, and a client trusting only the system roots, or
//     speaking plaintext, is refused.
func checkTLS(t *testing.T, e *env, svc *services, free func() int, runs []*run) {
	t.Helper()
	byComponent := map[string]*run{}
	for _, rn := range runs {
		if !rn.Job && rn.Cluster == "" && byComponent[rn.Inv.Component] == nil {
			byComponent[rn.Inv.Component] = rn
		}
	}
	server, scheduler := byComponent["server"], byComponent["scheduler"]
	if server == nil || scheduler == nil {
		return
	}
	if on, _ := server.Effective("grpc.tls.enabled"); on != "true" {
		t.Logf("%s: grpc.tls.enabled is %q: TLS is off in this render, not checked", server.ID(), on)
		return
	}
	t.Run("tls", func(t *testing.T) {
		serverHost := mustHost(t, scheduler, "armadaApi.armadaUrl")
		schedulerHost := mustHost(t, server, "schedulerApiConnection.armadaUrl")
		for _, rn := range []*run{server, scheduler} {
			if on, _ := rn.Effective("grpc.tls.enabled"); on != "true" {
				t.Errorf("%s: grpc.tls.enabled is %q; want true", rn.ID(), on)
			}
		}

		// The server, as rendered.
		sc := startComponent(t, e, svc, free, server)
		if sc.Err != nil {
			t.Fatal(sc.Err)
		}
		defer sc.Proc.Stop()
		showTail(t, server, sc.Proc)
		httpPort := sc.Moved["httpPort"]
		if !podrun.Listening(httpPort, startTimeout) {
			t.Fatalf("the server's httpPort %d is not listening", httpPort)
		}
		t.Run("server serves its rendered certificate", func(t *testing.T) {
			roots := rootsOf(t, scheduler)
			if err := httpsGet(t, httpPort, roots, serverHost); err != nil {
				t.Errorf("a client trusting the scheduler's SSL_CERT_FILE refuses the server as %s: %v", serverHost, err)
			}
			err := httpsGet(t, httpPort, nil, serverHost)
			t.Logf("a client trusting only the system roots: %v", err)
			if !unknownAuthority(err) {
				t.Errorf("a client trusting only the system roots must refuse the server with an unknown authority, got: %v", err)
			}
		})

		// The scheduler, as rendered.
		schp, grpcPort := startScheduler(t, e, svc, free, scheduler)
		defer schp.Stop()
		if svc.ArmadaAPI != nil && svc.ArmadaAPI.TLS && !queuesLoaded.MatchString(schp.Log()) {
			t.Errorf("the scheduler did not load its queues from the server's API serving the server's rendered certificate")
		}
		addr := "127.0.0.1:" + strconv.Itoa(grpcPort)
		t.Run("scheduler serves its rendered certificate", func(t *testing.T) {
			clients := []struct {
				rn   *run
				link string
				want codes.Code
			}{
				// The server's identity has no execute_jobs: Armada's
				// executor API authenticates it, then denies.
				{server, "schedulerApiConnection", codes.PermissionDenied},
			}
			if ex := byComponent["executor"]; ex != nil {
				clients = append(clients, struct {
					rn   *run
					link string
					want codes.Code
				}{ex, "executorApiConnection", codes.OK})
			}
			for _, c := range clients {
				host := mustHost(t, c.rn, c.link+".armadaUrl")
				if host != schedulerHost {
					t.Errorf("%s dials the scheduler as %s, the server as %s", c.rn.ID(), host, schedulerHost)
				}
				code, err := reportEvents(t, addr, credentials.NewTLS(&tls.Config{RootCAs: rootsOf(t, c.rn), ServerName: host, MinVersion: tls.VersionTLS12}), c.rn, c.link)
				t.Logf("%s's rendered trust, address and credentials: ReportEvents gave %s", c.rn.ID(), code)
				if code != c.want {
					t.Errorf("%s's rendered trust, address and credentials: ReportEvents gave %s (%v), want %s", c.rn.ID(), code, err, c.want)
				}
			}
			code, err := reportEvents(t, addr, credentials.NewTLS(&tls.Config{ServerName: schedulerHost, MinVersion: tls.VersionTLS12}), server, "schedulerApiConnection")
			t.Logf("a client trusting only the system roots: %v", err)
			if code != codes.Unavailable || !unknownAuthority(err) {
				t.Errorf("a client trusting only the system roots must be refused with an unknown authority, got %s: %v", code, err)
			}
			code, err = reportEvents(t, addr, insecure.NewCredentials(), server, "schedulerApiConnection")
			t.Logf("a plaintext client: %v", err)
			if code != codes.Unavailable {
				t.Errorf("a plaintext client must be refused, got %s: %v", code, err)
			}
		})
	})
}

// startScheduler starts the scheduler as rendered, against the example's
// real Pulsar broker, and waits for its gRPC port, which opens once
// Pulsar is up: its executor API then answers with Armada's own code,
// backed by the scheduler's database. It returns the process and the
// moved grpc.port.
func startScheduler(t *testing.T, e *env, svc *services, free func() int, scheduler *run) (*process, int) {
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
	showTail(t, scheduler, p)
	grpcPort := moved["grpc.port"]
	if !podrun.Listening(grpcPort, tlsTimeout) {
		p.Stop()
		t.Fatalf("the scheduler's grpc.port %d is not listening", grpcPort)
	}
	return p, grpcPort
}

// mustHost is the host of a run's effective host:port key.
func mustHost(t *testing.T, rn *run, key string) string {
	t.Helper()
	v, _ := rn.Effective(key)
	host, _, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		t.Fatalf("%s: %s is %q, not host:port", rn.ID(), key, v)
	}
	return host
}

// rootsOf is the CA pool a run trusts: the file its rendered SSL_CERT_FILE
// names, as its pod mounts it.
func rootsOf(t *testing.T, rn *run) *x509.CertPool {
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

// unknownAuthority says whether err is a certificate verification failure
// for lack of the issuing CA.
func unknownAuthority(err error) bool {
	return err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority")
}

// httpsGet GETs /health on a local port over TLS for host, trusting roots
// (the system's if nil). Any HTTP answer counts: the server's /health is
// 503 while Pulsar is down.
func httpsGet(t *testing.T, port int, roots *x509.CertPool, host string) error {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}}
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

// basicAuth is gRPC basic auth as Armada's client sends it.
type basicAuth struct{ user, password string }

func (b basicAuth) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "basic " + base64.StdEncoding.EncodeToString([]byte(b.user+":"+b.password))}, nil
}

func (basicAuth) RequireTransportSecurity() bool { return false }

// reportEvents calls the executor API's ReportEvents with no events at
// addr, with creds, as the basic-auth user of rn's link.
func reportEvents(t *testing.T, addr string, creds credentials.TransportCredentials, rn *run, link string) (codes.Code, error) {
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
