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

// checkLookoutTLS proves, when the render turns TLS on, that Armada's own
// Lookout binary, as rendered, serves its API, UI and /health over HTTPS
// with the certificate its pod mounts from the rendered Secret, at the
// URL the claim reports (status.endpoints.lookout): a client trusting
// only the composed CA (the file the rendered SSL_CERT_FILE of the
// scheduler names) accepts it for that URL's host, a client trusting
// only the system roots is refused, and plain HTTP gets no answer from
// the API. Binoculars stays plain: in Armada v0.22.x its HTTP port cannot
// serve TLS (docs/guides/tls.md).
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
	if on, _ := lookout.Effective("tls.enabled"); on != "true" {
		if strings.HasPrefix(lookoutURL, "https:") {
			t.Errorf("status.endpoints.lookout is %s but the rendered lookout has tls.enabled %q", lookoutURL, on)
		}
		t.Logf("%s: tls.enabled is %q: Lookout's TLS is off in this render, not checked", lookout.ID(), on)
		return
	}
	t.Run("lookout tls", func(t *testing.T) {
		u, err := url.Parse(lookoutURL)
		if err != nil || u.Scheme != "https" {
			t.Fatalf("status.endpoints.lookout is %q; with Lookout serving TLS it must be an https URL", lookoutURL)
		}
		lc := conformance.StartComponent(t, e, svc, free, lookout)
		if lc.Err != nil {
			t.Fatal(lc.Err)
		}
		defer lc.Proc.Stop()
		conformance.ShowTail(t, lookout, lc.Proc)
		port := lc.Moved["apiPort"]
		if !podrun.Listening(port, conformance.StartTimeout) {
			t.Fatalf("lookout's apiPort %d is not listening", port)
		}
		roots := conformance.RootsOf(t, scheduler)
		host := conformance.LookoutServiceHost(t, lookout, u.Hostname())
		// Lookout opens its port before it answers; the first
		// handshakes may race its start.
		deadline := time.Now().Add(30 * time.Second)
		for err = conformance.HTTPSGet(t, port, roots, host); err != nil && time.Now().Before(deadline); err = conformance.HTTPSGet(t, port, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("a client trusting only the composed CA refuses Lookout as %s: %v", host, err)
		}
		err = conformance.HTTPSGet(t, port, nil, host)
		t.Logf("a client trusting only the system roots: %v", err)
		if !conformance.UnknownAuthority(err) {
			t.Errorf("a client trusting only the system roots must refuse Lookout with an unknown authority, got: %v", err)
		}
		code, err := conformance.PlainGet(t, port)
		t.Logf("a plain HTTP client: status %d, %v", code, err)
		if err == nil && code != http.StatusBadRequest {
			t.Errorf("a plain HTTP client got status %d from Lookout's TLS port; want a refusal (400, as Go answers plaintext on a TLS port, or an error)", code)
		}
	})
}
