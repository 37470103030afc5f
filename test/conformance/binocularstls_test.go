package conformance

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

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
func checkBinocularsTLS(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, runs []*conformance.Run) {
	t.Helper()
	var bino, lookout, scheduler *conformance.Run
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
		bc := conformance.StartComponent(t, e, svc, free, bino)
		if bc.Err != nil {
			t.Fatal(bc.Err)
		}
		defer bc.Proc.Stop()
		conformance.ShowTail(t, bino, bc.Proc)
		for _, k := range []string{"grpcPort", "httpPort"} {
			if !podrun.Listening(bc.Moved[k], conformance.StartTimeout) {
				t.Fatalf("binoculars' %s %d is not listening", k, bc.Moved[k])
			}
		}
		local := conformance.StartSidecars(t, bino, bc)
		grpcPort, httpPort := local[bino.SidecarPort("grpc")], local[bino.SidecarPort("http")]
		if grpcPort == 0 || httpPort == 0 {
			t.Fatalf("the sidecars serve %v, want binoculars' grpc and http ports", local)
		}
		if p := bino.Inv.Readiness; p == nil || p.HTTPGet == nil {
			t.Errorf("binoculars has no httpGet readinessProbe: %+v", p)
		} else if err := conformance.PollProbe(p, local[p.HTTPGet.Port.IntVal], conformance.StartTimeout); err != nil {
			t.Errorf("binoculars' readinessProbe (%s %s on %s, through the sidecar) did not pass: %v", p.HTTPGet.Scheme, p.HTTPGet.Path, p.HTTPGet.Port.String(), err)
		}
		roots := conformance.RootsOf(t, scheduler)
		host := u.Hostname()
		deadline := time.Now().Add(30 * time.Second)
		for err = conformance.HTTPSGet(t, httpPort, roots, host); err != nil && time.Now().Before(deadline); err = conformance.HTTPSGet(t, httpPort, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("a client trusting only the composed CA refuses binoculars as %s: %v", host, err)
		}
		// The gateway dials binoculars' gRPC port before it listens and
		// answers 503 until its reconnect backoff passes.
		deadline = time.Now().Add(30 * time.Second)
		code, err := conformance.BinocularsLogs(t, httpPort, roots, host)
		for ; code == http.StatusServiceUnavailable && time.Now().Before(deadline); code, err = conformance.BinocularsLogs(t, httpPort, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("binoculars' API (POST /v1/binoculars/log without credentials) over TLS: status %d, %v; want 401 from Armada's auth", code, err)
		}
		err = conformance.HTTPSGet(t, httpPort, nil, host)
		t.Logf("a client trusting only the system roots: %v", err)
		if !conformance.UnknownAuthority(err) {
			t.Errorf("a client trusting only the system roots must refuse binoculars with an unknown authority, got: %v", err)
		}
		code, err = conformance.PlainGet(t, httpPort)
		t.Logf("a plain HTTP client: status %d, %v", code, err)
		if err == nil {
			t.Errorf("a plain HTTP client got status %d from binoculars' TLS port; want no answer", code)
		}
		if err := conformance.TLSHandshake(grpcPort, roots, host); err != nil {
			t.Errorf("binoculars' gRPC port: a client trusting only the composed CA refuses it as %s: %v", host, err)
		}
		if err := conformance.TLSHandshake(grpcPort, nil, host); !conformance.UnknownAuthority(err) {
			t.Errorf("binoculars' gRPC port: a client trusting only the system roots must refuse it, got: %v", err)
		}
		// A TLS alert (0x15) is a refusal; anything else an answer.
		if b, _ := conformance.PlainGRPC(t.Context(), grpcPort); len(b) > 0 && b[0] != 0x15 {
			t.Errorf("binoculars' gRPC port answered %q to a plaintext HTTP/2 preface; want no answer", b)
		}
	})
}
