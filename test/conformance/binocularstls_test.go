package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

// A sidecar is a third-party container of an Armada pod that the test runs
// as its tool's binary (podrun.ToolForImage): binoculars' TLS proxies.
type sidecar struct {
	Tool string
	// Inv is the container reconstructed from the render: its mounts,
	// environment and declared ports; Args its command as the kubelet
	// runs it.
	Inv  *invocation
	Args []string
	Root string
}

// addSidecar records a tool container of w on the run of w's Armada
// container, which the pod lists first.
func addSidecar(t *testing.T, rs *podrun.Resolver, w workload, c corev1.Container, tool string, runs []*run) {
	t.Helper()
	var owner *run
	for _, rn := range runs {
		if rn.Inv.Workload == w.ID() && !rn.Job {
			owner = rn
		}
	}
	if owner == nil {
		t.Errorf("%s: container %s runs %s beside no Armada container", w.ID(), c.Name, c.Image)
		return
	}
	root := t.TempDir()
	inv, err := rs.Container(w, c, root)
	if err != nil {
		t.Errorf("%s: container %s cannot be reproduced from the render: %v", w.ID(), c.Name, err)
		return
	}
	owner.Sidecars = append(owner.Sidecars, &sidecar{Tool: tool, Inv: inv, Args: inv.Command(c), Root: root})
}

// servingSidecar is the sidecar of rn that declares a container port
// numbered port, or nil.
func servingSidecar(rn *run, port int32) *sidecar {
	for _, sc := range rn.Sidecars {
		for _, p := range sc.Inv.Ports {
			if p == port {
				return sc
			}
		}
	}
	return nil
}

// checkBinocularsTLS proves, when the render turns TLS on, that
// binoculars' ports are served over TLS by its sidecars: Armada's own
// binoculars binary, as rendered, behind the real ghostunnel binary run
// with the sidecars' rendered args and mounts. Its readinessProbe passes
// (HTTPS /health through the proxy); a client trusting only the composed
// CA reaches its REST API at the host of Lookout's rendered
// binocularsBaseUrlPattern, which is https (the API answers 401 to a
// request without credentials: the gateway reached binoculars' gRPC
// server); one trusting only the system roots is refused, plain HTTP gets
// no answer; its gRPC port completes a TLS handshake for the same name
// with the CA, refuses the system roots and answers no plaintext.
func checkBinocularsTLS(t *testing.T, e *env, svc *services, free func() int, runs []*run) {
	t.Helper()
	var bino, lookout, scheduler *run
	for _, rn := range runs {
		if rn.Job || rn.Cluster != "" {
			continue
		}
		switch rn.Inv.Component {
		case "binoculars":
			bino = rn
		case "lookout":
			lookout = rn
		case "scheduler":
			scheduler = rn
		}
	}
	if bino == nil || lookout == nil || scheduler == nil {
		return
	}
	pattern, _ := lookout.Effective("uiConfig.binocularsBaseUrlPattern")
	if on, _ := scheduler.Effective("grpc.tls.enabled"); on != "true" {
		if len(bino.Sidecars) > 0 || strings.HasPrefix(pattern, "https:") {
			t.Errorf("TLS is off (the scheduler's grpc.tls.enabled is %q) but binoculars has %d TLS sidecars and Lookout calls it at %s", on, len(bino.Sidecars), pattern)
		}
		t.Logf("%s: TLS is off in this render; binoculars' TLS not checked", bino.ID())
		return
	}
	t.Run("binoculars tls", func(t *testing.T) {
		u, err := url.Parse(pattern)
		if err != nil || u.Scheme != "https" {
			t.Fatalf("Lookout's binocularsBaseUrlPattern is %q; with TLS on the UI must call binoculars over https", pattern)
		}
		if len(bino.Sidecars) == 0 {
			t.Fatalf("TLS is on but %s has no TLS sidecar: binoculars serves users in plaintext", bino.ID())
		}
		bc := startComponent(t, e, svc, free, bino)
		if bc.Err != nil {
			t.Fatal(bc.Err)
		}
		defer bc.Proc.Stop()
		showTail(t, bino, bc.Proc)
		for _, k := range []string{"grpcPort", "httpPort"} {
			if !podrun.Listening(bc.Moved[k], startTimeout) {
				t.Fatalf("binoculars' %s %d is not listening", k, bc.Moved[k])
			}
		}
		local := startSidecars(t, bino, bc)
		grpcPort, httpPort := local[bino.sidecarPort("grpc")], local[bino.sidecarPort("http")]
		if grpcPort == 0 || httpPort == 0 {
			t.Fatalf("the sidecars serve %v, want binoculars' grpc and http ports", local)
		}
		if p := bino.Inv.Readiness; p == nil || p.HTTPGet == nil {
			t.Errorf("binoculars has no httpGet readinessProbe: %+v", p)
		} else if err := pollProbe(p, local[p.HTTPGet.Port.IntVal], startTimeout); err != nil {
			t.Errorf("binoculars' readinessProbe (%s %s on %s, through the sidecar) did not pass: %v", p.HTTPGet.Scheme, p.HTTPGet.Path, p.HTTPGet.Port.String(), err)
		}
		roots := rootsOf(t, scheduler)
		host := u.Hostname()
		deadline := time.Now().Add(30 * time.Second)
		for err = httpsGet(t, httpPort, roots, host); err != nil && time.Now().Before(deadline); err = httpsGet(t, httpPort, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("a client trusting only the composed CA refuses binoculars as %s: %v", host, err)
		}
		// The gateway dials binoculars' gRPC port before it listens and
		// answers 503 until its reconnect backoff passes.
		deadline = time.Now().Add(30 * time.Second)
		code, err := binocularsLogs(t, httpPort, roots, host)
		for ; code == http.StatusServiceUnavailable && time.Now().Before(deadline); code, err = binocularsLogs(t, httpPort, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("binoculars' API (POST /v1/binoculars/log without credentials) over TLS: status %d, %v; want 401 from Armada's auth", code, err)
		}
		err = httpsGet(t, httpPort, nil, host)
		t.Logf("a client trusting only the system roots: %v", err)
		if !unknownAuthority(err) {
			t.Errorf("a client trusting only the system roots must refuse binoculars with an unknown authority, got: %v", err)
		}
		code, err = plainGet(t, httpPort)
		t.Logf("a plain HTTP client: status %d, %v", code, err)
		if err == nil {
			t.Errorf("a plain HTTP client got status %d from binoculars' TLS port; want no answer", code)
		}
		if err := tlsHandshake(grpcPort, roots, host); err != nil {
			t.Errorf("binoculars' gRPC port: a client trusting only the composed CA refuses it as %s: %v", host, err)
		}
		if err := tlsHandshake(grpcPort, nil, host); !unknownAuthority(err) {
			t.Errorf("binoculars' gRPC port: a client trusting only the system roots must refuse it, got: %v", err)
		}
		// A TLS alert (0x15) is a refusal; anything else an answer.
		if b, _ := plainGRPC(t.Context(), grpcPort); len(b) > 0 && b[0] != 0x15 {
			t.Errorf("binoculars' gRPC port answered %q to a plaintext HTTP/2 preface; want no answer", b)
		}
	})
}

// sidecarPort is the container port a sidecar of rn declares by name.
func (r *run) sidecarPort(name string) int32 {
	for _, sc := range r.Sidecars {
		if p, ok := sc.Inv.Ports[name]; ok {
			return p
		}
	}
	return 0
}

// startSidecars runs each sidecar of rn as the pinned ghostunnel binary,
// in a root of its own with its rendered mounts, listening on free
// loopback ports and forwarding to where rn's ports moved; it returns
// each served port's local port once listening.
func startSidecars(t *testing.T, rn *run, c *component) map[int32]int {
	t.Helper()
	bin := testenv.ToolBin(t, podrun.Ghostunnel, armada.TLSProxyVersion)
	local := map[int32]int{}
	for i, sc := range rn.Sidecars {
		if sc.Tool != podrun.Ghostunnel {
			t.Fatalf("%s: sidecar runs %s, which the test does not run", rn.ID(), sc.Tool)
		}
		ports := &ports{t: t}
		args, listened, err := podrun.MoveGhostunnelPorts(sc.Args,
			func(int32) (int, error) { return ports.Free(), nil },
			func(p int32) (int, bool) { _, m, ok := movedPort(rn, c.Moved, p); return m, ok })
		if err != nil {
			t.Fatalf("%s sidecar %s: %v", rn.ID(), sc.Inv.Container, err)
		}
		root := t.TempDir()
		cmd, cargs, err := podrun.PodCommand(root, rn.HostsFile, "/", sc.Inv.Mounts, bin, args)
		if err != nil {
			t.Fatal(err)
		}
		env := make([]string, 0, len(sc.Inv.Env))
		for _, v := range sc.Inv.Env {
			env = append(env, v.Name+"="+v.Value)
		}
		p, err := startProcess(t, cmd, "/", cargs, env, filepath.Join(t.TempDir(), "sidecar-"+strconv.Itoa(i)+".log"))
		if err != nil {
			t.Fatalf("%s sidecar %s: %v", rn.ID(), sc.Inv.Container, err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s sidecar %s (%s %v), last lines:\n%s", rn.ID(), sc.Inv.Container, bin, args, p.Tail(20))
			}
		})
		for served, port := range listened {
			if !podrun.Listening(port, startTimeout) {
				t.Fatalf("%s sidecar %s does not listen for port %d on %d", rn.ID(), sc.Inv.Container, served, port)
			}
			local[served] = port
		}
	}
	return local
}

// binocularsLogs POSTs an empty log request to binoculars' REST API over
// TLS without credentials and returns the status.
func binocularsLogs(t *testing.T, port int, roots *x509.CertPool, host string) (int, error) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://127.0.0.1:"+strconv.Itoa(port)+"/v1/binoculars/log", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, resp.Body.Close()
}

// tlsHandshake completes a TLS handshake with a local port as host.
func tlsHandshake(port int, roots *x509.CertPool, host string) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
	conn, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return conn.Close()
}

// plainGRPC sends a plaintext HTTP/2 client preface, as a gRPC client
// without TLS does, and returns what came back before the connection
// closed or a second passed.
func plainGRPC(ctx context.Context, port int) ([]byte, error) {
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	return io.ReadAll(conn)
}
