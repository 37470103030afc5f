package conformance

import (
	"crypto/tls"
	"regexp"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

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
func checkTLS(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, runs []*conformance.Run) {
	t.Helper()
	byComponent := map[string]*conformance.Run{}
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
		serverHost := conformance.MustHost(t, scheduler, "armadaApi.armadaUrl")
		schedulerHost := conformance.MustHost(t, server, "schedulerApiConnection.armadaUrl")
		for _, rn := range []*conformance.Run{server, scheduler} {
			if on, _ := rn.Effective("grpc.tls.enabled"); on != "true" {
				t.Errorf("%s: grpc.tls.enabled is %q; want true", rn.ID(), on)
			}
		}

		// The server, as rendered.
		sc := conformance.StartComponent(t, e, svc, free, server)
		if sc.Err != nil {
			t.Fatal(sc.Err)
		}
		defer sc.Proc.Stop()
		conformance.ShowTail(t, server, sc.Proc)
		httpPort := sc.Moved["httpPort"]
		if !podrun.Listening(httpPort, conformance.StartTimeout) {
			t.Fatalf("the server's httpPort %d is not listening", httpPort)
		}
		t.Run("server serves its rendered certificate", func(t *testing.T) {
			roots := conformance.RootsOf(t, scheduler)
			if err := conformance.HTTPSGet(t, httpPort, roots, serverHost); err != nil {
				t.Errorf("a client trusting the scheduler's SSL_CERT_FILE refuses the server as %s: %v", serverHost, err)
			}
			err := conformance.HTTPSGet(t, httpPort, nil, serverHost)
			t.Logf("a client trusting only the system roots: %v", err)
			if !conformance.UnknownAuthority(err) {
				t.Errorf("a client trusting only the system roots must refuse the server with an unknown authority, got: %v", err)
			}
		})

		// The scheduler, as rendered.
		schp, grpcPort := conformance.StartScheduler(t, e, svc, free, scheduler)
		defer schp.Stop()
		if svc.ArmadaAPI != nil && svc.ArmadaAPI.TLS && !queuesLoaded.MatchString(schp.Log()) {
			t.Errorf("the scheduler did not load its queues from the server's API serving the server's rendered certificate")
		}
		addr := "127.0.0.1:" + strconv.Itoa(grpcPort)
		t.Run("scheduler serves its rendered certificate", func(t *testing.T) {
			clients := []struct {
				rn   *conformance.Run
				link string
				want codes.Code
			}{
				// The server's identity has no execute_jobs: Armada's
				// executor API authenticates it, then denies.
				{server, "schedulerApiConnection", codes.PermissionDenied},
			}
			if ex := byComponent["executor"]; ex != nil {
				clients = append(clients, struct {
					rn   *conformance.Run
					link string
					want codes.Code
				}{ex, "executorApiConnection", codes.OK})
			}
			for _, c := range clients {
				host := conformance.MustHost(t, c.rn, c.link+".armadaUrl")
				if host != schedulerHost {
					t.Errorf("%s dials the scheduler as %s, the server as %s", c.rn.ID(), host, schedulerHost)
				}
				code, err := conformance.ReportEvents(t, addr, credentials.NewTLS(&tls.Config{RootCAs: conformance.RootsOf(t, c.rn), ServerName: host, MinVersion: tls.VersionTLS12}), c.rn, c.link)
				t.Logf("%s's rendered trust, address and credentials: ReportEvents gave %s", c.rn.ID(), code)
				if code != c.want {
					t.Errorf("%s's rendered trust, address and credentials: ReportEvents gave %s (%v), want %s", c.rn.ID(), code, err, c.want)
				}
			}
			code, err := conformance.ReportEvents(t, addr, credentials.NewTLS(&tls.Config{ServerName: schedulerHost, MinVersion: tls.VersionTLS12}), server, "schedulerApiConnection")
			t.Logf("a client trusting only the system roots: %v", err)
			if code != codes.Unavailable || !conformance.UnknownAuthority(err) {
				t.Errorf("a client trusting only the system roots must be refused with an unknown authority, got %s: %v", code, err)
			}
			code, err = conformance.ReportEvents(t, addr, insecure.NewCredentials(), server, "schedulerApiConnection")
			t.Logf("a plaintext client: %v", err)
			if code != codes.Unavailable {
				t.Errorf("a plaintext client must be refused, got %s: %v", code, err)
			}
		})
	})
}
