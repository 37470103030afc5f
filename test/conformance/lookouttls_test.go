package conformance

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// checkLookoutTLS proves, when the render turns TLS on, that Lookout's
// API, UI and /health are served over HTTPS by its TLS sidecar: Armada's
// own Lookout binary, as rendered, behind the real ghostunnel binary run
// with the sidecar's rendered args and mounts, at the URL the claim
// reports (status.endpoints.lookout). Lookout's own TLS block stays off:
// its HTTP/2 server closes idle connections, which browsers do not
// survive (docs/guides/lookout.md). Its readinessProbe passes through the
// sidecar; a client trusting only the composed CA (the file the rendered
// SSL_CERT_FILE of the scheduler names) accepts it for that URL's host
// and, offered HTTP/2, is answered over HTTP/1.1; a client trusting only
// the system roots is refused, and plain HTTP gets no answer.
func checkLookoutTLS(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, runs []*conformance.Run, lookoutURL string) {
	t.Helper()
	var lookout, scheduler *conformance.Run
	for _, rn := range runs {
		if rn.Job || rn.Cluster != "" {
			continue
		}
		switch {
		case rn.Inv.Component == "lookout" && lookout == nil:
			lookout = rn
		case rn.Inv.Component == "scheduler" && scheduler == nil:
			scheduler = rn
		}
	}
	if lookout == nil || scheduler == nil {
		return
	}
	if on, _ := lookout.Effective("tls.enabled"); on == "true" {
		t.Errorf("%s serves TLS itself (tls.enabled true): its HTTP/2 server closes idle connections a browser still uses; it must be served through its TLS sidecar", lookout.ID())
	}
	if on, _ := scheduler.Effective("grpc.tls.enabled"); on != "true" {
		if len(lookout.Sidecars) > 0 || strings.HasPrefix(lookoutURL, "https:") {
			t.Errorf("TLS is off (the scheduler's grpc.tls.enabled is %q) but Lookout has %d TLS sidecars and status.endpoints.lookout is %s", on, len(lookout.Sidecars), lookoutURL)
		}
		t.Logf("%s: TLS is off in this render; Lookout's TLS not checked", lookout.ID())
		return
	}
	t.Run("lookout tls", func(t *testing.T) {
		u, err := url.Parse(lookoutURL)
		if err != nil || u.Scheme != "https" {
			t.Fatalf("status.endpoints.lookout is %q; with TLS on it must be an https URL", lookoutURL)
		}
		if len(lookout.Sidecars) == 0 {
			t.Fatalf("TLS is on but %s has no TLS sidecar: Lookout serves users in plaintext", lookout.ID())
		}
		lc := conformance.StartComponent(t, e, svc, free, lookout)
		if lc.Err != nil {
			t.Fatal(lc.Err)
		}
		defer lc.Proc.Stop()
		conformance.ShowTail(t, lookout, lc.Proc)
		if !podrun.Listening(lc.Moved["apiPort"], conformance.StartTimeout) {
			t.Fatalf("lookout's apiPort %d is not listening", lc.Moved["apiPort"])
		}
		local := conformance.StartSidecars(t, lookout, lc)
		port := local[lookout.SidecarPort("http")]
		if port == 0 {
			t.Fatalf("the sidecars serve %v, want Lookout's http port", local)
		}
		if p := lookout.Inv.Readiness; p == nil || p.HTTPGet == nil {
			t.Errorf("Lookout has no httpGet readinessProbe: %+v", p)
		} else if err := conformance.PollProbe(p, local[p.HTTPGet.Port.IntVal], conformance.StartTimeout); err != nil {
			t.Errorf("Lookout's readinessProbe (%s %s on %s, through the sidecar) did not pass: %v", p.HTTPGet.Scheme, p.HTTPGet.Path, p.HTTPGet.Port.String(), err)
		}
		roots := conformance.RootsOf(t, scheduler)
		host := conformance.LookoutServiceHost(t, lookout, u.Hostname())
		// Lookout opens its port before it answers; the first
		// handshakes may race its start.
		deadline := time.Now().Add(30 * time.Second)
		proto, err := conformance.HTTPSProto(t, port, roots, host)
		for ; err != nil && time.Now().Before(deadline); proto, err = conformance.HTTPSProto(t, port, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("a client trusting only the composed CA refuses Lookout as %s: %v", host, err)
		} else if proto != "HTTP/1.1" {
			t.Errorf("a client offering HTTP/2 and HTTP/1.1 was answered over %s; want HTTP/1.1, which Lookout keeps open", proto)
		}
		err = conformance.HTTPSGet(t, port, nil, host)
		t.Logf("a client trusting only the system roots: %v", err)
		if !conformance.UnknownAuthority(err) {
			t.Errorf("a client trusting only the system roots must refuse Lookout with an unknown authority, got: %v", err)
		}
		code, err := conformance.PlainGet(t, port)
		t.Logf("a plain HTTP client: status %d, %v", code, err)
		if err == nil {
			t.Errorf("a plain HTTP client got status %d from Lookout's TLS port; want no answer", code)
		}
	})
}
