package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// A Sidecar is a third-party container of an Armada pod that the test runs
// as its tool's binary (podrun.ToolForImage): binoculars' TLS proxies.
type Sidecar struct {
	Tool string
	// Inv is the container reconstructed from the render: its mounts,
	// environment and declared ports; Args its command as the kubelet
	// runs it.
	Inv  *podrun.Invocation
	Args []string
	Root string
}

// addSidecar records a tool container of w on the run of w's Armada
// container, which the pod lists first.
func addSidecar(t *testing.T, rs *podrun.Resolver, w podrun.Workload, c corev1.Container, tool string, runs []*Run) {
	t.Helper()
	var owner *Run
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
	owner.Sidecars = append(owner.Sidecars, &Sidecar{Tool: tool, Inv: inv, Args: inv.Command(c), Root: root})
}

// servingSidecar is the sidecar of rn that declares a container port
// numbered port, or nil.
func servingSidecar(rn *Run, port int32) *Sidecar {
	for _, sc := range rn.Sidecars {
		for _, p := range sc.Inv.Ports {
			if p == port {
				return sc
			}
		}
	}
	return nil
}

// SidecarPort is the container port a sidecar of r declares by name.
func (r *Run) SidecarPort(name string) int32 {
	for _, sc := range r.Sidecars {
		if p, ok := sc.Inv.Ports[name]; ok {
			return p
		}
	}
	return 0
}

// StartSidecars runs each sidecar of rn as the pinned ghostunnel binary,
// in a root of its own with its rendered mounts, listening on free
// loopback ports and forwarding to where rn's ports moved; it returns
// each served port's local port once listening.
func StartSidecars(t *testing.T, rn *Run, c *Component) map[int32]int {
	t.Helper()
	bin := testenv.ToolBin(t, podrun.Ghostunnel, armada.TLSProxyVersion)
	local := map[int32]int{}
	for i, sc := range rn.Sidecars {
		if sc.Tool != podrun.Ghostunnel {
			t.Fatalf("%s: sidecar runs %s, which the test does not run", rn.ID(), sc.Tool)
		}
		ports := NewPorts(t)
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
			if !podrun.Listening(port, StartTimeout) {
				t.Fatalf("%s sidecar %s does not listen for port %d on %d", rn.ID(), sc.Inv.Container, served, port)
			}
			local[served] = port
		}
	}
	return local
}

// BinocularsLogs POSTs an empty log request to binoculars' REST API over
// TLS without credentials and returns the status.
func BinocularsLogs(t *testing.T, port int, roots *x509.CertPool, host string) (int, error) {
	t.Helper()
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
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

// TLSHandshake completes a TLS handshake with a local port as host.
func TLSHandshake(port int, roots *x509.CertPool, host string) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
	conn, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return conn.Close()
}

// PlainGRPC sends a plaintext HTTP/2 client preface, as a gRPC client
// without TLS does, and returns what came back before the connection
// closed or a second passed.
func PlainGRPC(ctx context.Context, port int) ([]byte, error) {
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
