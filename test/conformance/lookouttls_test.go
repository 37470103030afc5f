package conformance

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/podrun"
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
func checkLookoutTLS(t *testing.T, e *env, svc *services, free func() int, runs []*run, lookoutURL string) {
	t.Helper()
	var lookout, scheduler *run
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
		lc := startComponent(t, e, svc, free, lookout)
		if lc.Err != nil {
			t.Fatal(lc.Err)
		}
		defer lc.Proc.Stop()
		showTail(t, lookout, lc.Proc)
		port := lc.Moved["apiPort"]
		if !podrun.Listening(port, startTimeout) {
			t.Fatalf("lookout's apiPort %d is not listening", port)
		}
		roots := rootsOf(t, scheduler)
		host := lookoutServiceHost(t, lookout, u.Hostname())
		// Lookout opens its port before it answers; the first
		// handshakes may race its start.
		deadline := time.Now().Add(30 * time.Second)
		for err = httpsGet(t, port, roots, host); err != nil && time.Now().Before(deadline); err = httpsGet(t, port, roots, host) {
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("a client trusting only the composed CA refuses Lookout as %s: %v", host, err)
		}
		err = httpsGet(t, port, nil, host)
		t.Logf("a client trusting only the system roots: %v", err)
		if !unknownAuthority(err) {
			t.Errorf("a client trusting only the system roots must refuse Lookout with an unknown authority, got: %v", err)
		}
		code, err := plainGet(t, port)
		t.Logf("a plain HTTP client: status %d, %v", code, err)
		if err == nil && code != http.StatusBadRequest {
			t.Errorf("a plain HTTP client got status %d from Lookout's TLS port; want a refusal (400, as Go answers plaintext on a TLS port, or an error)", code)
		}
	})
}

// plainGet GETs /health on a local port in plain HTTP.
func plainGet(t *testing.T, port int) (int, error) {
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

// lookoutServiceHost is the name in-cluster clients dial Lookout by: the
// endpoint's host when it is a Service name, else (an ingress serves
// Lookout at an external host, and the ingress controller terminates TLS
// with the user's own certificate) the name under Lookout's Service that
// the certificate Lookout serves holds, read from the file the pod mounts.
func lookoutServiceHost(t *testing.T, lookout *run, endpointHost string) string {
	t.Helper()
	if strings.HasSuffix(endpointHost, ".svc") {
		return endpointHost
	}
	path, _ := lookout.Effective("tls.certPath")
	b, err := os.ReadFile(podrun.NewRewriter(lookout.Inv.Mounts).Rewrite(path))
	if err != nil {
		t.Fatalf("%s: tls.certPath %q: %v", lookout.ID(), path, err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: tls.certPath %q holds no PEM certificate", lookout.ID(), path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: tls.certPath %q: %v", lookout.ID(), path, err)
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
