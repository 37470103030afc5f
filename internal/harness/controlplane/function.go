package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// FunctionName is the name the Composition's pipeline refers to the
// function by; FunctionRevisionName is the paused revision that points
// Crossplane at the local function.
const (
	FunctionName         = "function-armada"
	FunctionRevisionName = FunctionName + "-1"
)

// buildResult is the outcome of building function-armada.
type buildResult struct {
	path string
	err  error
}

// buildFunction builds function-armada from the repository into DataDir and
// returns the binary's path. Each control plane links it afresh (go build
// caches compiled packages, not binaries): without a symbol table or DWARF
// (-s -w), which nothing here reads, 2.5 CPU-seconds instead of 3.3.
func (c *ControlPlane) buildFunction(ctx context.Context) (string, error) {
	start := time.Now()
	out := filepath.Join(c.dir, "bin", FunctionName)
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, "./functions/armada")
	cmd.Dir = c.opts.RepoRoot
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", errors.Wrapf(err, "cannot build function-armada: %s", b)
	}
	c.opts.Logf("function-armada built in %.1fs (in parallel)", time.Since(start).Seconds())
	return out, nil
}

// startFunctionFirst waits for the function's build, starts it and creates
// the paused FunctionRevision pointing Crossplane at it.
func (c *ControlPlane) startFunctionFirst(ctx context.Context) error {
	if c.fnBuilt != nil {
		select {
		case r := <-c.fnBuilt:
			c.fnBuilt = nil
			if r.err != nil {
				return r.err
			}
			c.opts.Function = r.path
		case <-ctx.Done():
			return errors.Wrap(ctx.Err(), "cannot wait for function-armada build")
		}
	}
	c.fnEndpoint = "127.0.0.1:" + strconv.Itoa(c.ports.function)
	// Its metrics on a loopback port of its own, not the default :8080 on
	// every interface, which would take that port from everything beside
	// it (seen: the job flow's Service relays on 127.x.y.z:8080).
	args := []string{"--address=" + c.fnEndpoint, "--metrics-address=127.0.0.1:" + strconv.Itoa(c.ports.functionMetrics)}
	if c.opts.Debug {
		args = append(args, "--debug")
	}
	env := append([]string{"TLS_SERVER_CERTS_DIR=" + c.tlsDirs.function}, c.opts.FunctionEnv...)
	c.newProcess(ProcFunction, c.opts.Function, args, env)
	if err := c.StartFunction(ctx); err != nil {
		return err
	}
	return c.createFunctionRevision(ctx)
}

// StartFunction starts function-armada again after StopFunction, on the same
// endpoint, and waits until it accepts mTLS connections.
func (c *ControlPlane) StartFunction(ctx context.Context) error {
	p := c.procs[ProcFunction]
	if err := p.start(); err != nil {
		return err
	}
	cfg, err := c.functionClientTLS()
	if err != nil {
		return err
	}
	return p.waitReady(ctx, stepTimeout, "function-armada mTLS handshake", func(ctx context.Context) error {
		d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
		conn, err := d.DialContext(ctx, "tcp", c.fnEndpoint)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// RestartFunction stops function-armada and starts it again with extra
// arguments after its usual ones (none restores them), on the same
// endpoint: for tests that run the function with a test-only flag, such
// as --cert-clock-offset.
func (c *ControlPlane) RestartFunction(ctx context.Context, extra ...string) error {
	p := c.procs[ProcFunction]
	if err := p.stop(); err != nil {
		return err
	}
	p.mu.Lock()
	if c.fnArgs == nil {
		c.fnArgs = p.args
	}
	p.args = append(slices.Clone(c.fnArgs), extra...)
	p.mu.Unlock()
	return c.StartFunction(ctx)
}

// StopFunction kills function-armada, for fault-injection tests. Crossplane
// keeps dialling its endpoint; restart it with StartFunction.
func (c *ControlPlane) StopFunction() error {
	return c.procs[ProcFunction].stop()
}

// functionClientTLS returns the TLS config Crossplane dials the function
// with: its client certificate, trusting the control plane's CA.
func (c *ControlPlane) functionClientTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(c.tlsDirs.crossplaneClient, fileTLSCert), filepath.Join(c.tlsDirs.crossplaneClient, fileTLSKey))
	if err != nil {
		return nil, errors.Wrap(err, "cannot load Crossplane client certificate")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.ca.certPEM)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   "127.0.0.1",
		NextProtos:   []string{"h2"}, // gRPC servers require ALPN h2.
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// createFunctionRevision creates the FunctionRevision Crossplane's function
// runner finds by the pkg.crossplane.io/package label, paused so the package
// manager never resolves its image, and sets its status to the local
// endpoint with the composition capability.
func (c *ControlPlane) createFunctionRevision(ctx context.Context) error {
	fr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "FunctionRevision",
		"metadata": map[string]any{
			"name":        FunctionRevisionName,
			"labels":      map[string]any{"pkg.crossplane.io/package": FunctionName},
			"annotations": map[string]any{"crossplane.io/paused": "true"},
		},
		"spec": map[string]any{
			"desiredState": "Active",
			"image":        "example.invalid/" + FunctionName + ":v0.0.0",
			"revision":     int64(1),
		},
	}}
	if err := c.apply(ctx, fr); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"endpoint":     c.fnEndpoint,
		"capabilities": []string{"composition"},
	}})
	if err != nil {
		return errors.Wrap(err, "cannot marshal FunctionRevision status")
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(fr.GroupVersionKind())
	if err := c.client.Get(ctx, types.NamespacedName{Name: FunctionRevisionName}, got); err != nil {
		return errors.Wrap(err, "cannot get FunctionRevision")
	}
	err = c.client.Status().Patch(ctx, got, client.RawPatch(types.MergePatchType, patch))
	return errors.Wrap(err, "cannot patch FunctionRevision status")
}
