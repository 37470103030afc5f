package jobflow

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
)

// LookoutUIConfig is the part of Lookout's UI configuration a browser
// uses to reach Armada, as Lookout serves it to the page.
type LookoutUIConfig struct {
	ArmadaAPIBaseURL         string `json:"armadaApiBaseUrl"`
	BinocularsBaseURLPattern string `json:"binocularsBaseUrlPattern"`
	CustomTitle              string `json:"customTitle"`
	OidcEnabled              bool   `json:"oidcEnabled"`
	CommandSpecs             []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	} `json:"commandSpecs"`
}

// uiConfigPrefix starts Lookout's /lookout-ui-config.js
// (internal/lookout/gen/restapi/configure_lookout.go: uiHandler).
const uiConfigPrefix = "window.__LOOKOUT_UI_CONFIG__ = "

// GetLookoutUIConfig reads /lookout-ui-config.js from Lookout, as the
// page loads it (no credentials: the UI loads it before any login).
func GetLookoutUIConfig(ctx context.Context, l Lookout) (LookoutUIConfig, error) {
	var cfg LookoutUIConfig
	hc, err := l.client()
	if err != nil {
		return cfg, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL+"/lookout-ui-config.js", http.NoBody)
	if err != nil {
		return cfg, errors.Wrap(err, "cannot build Lookout's request")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return cfg, errors.Wrap(err, "cannot ask Lookout")
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return cfg, errors.Errorf("lookout answered %s: %s", resp.Status, b.String())
	}
	js, ok := strings.CutPrefix(b.String(), uiConfigPrefix)
	if !ok {
		return cfg, errors.Errorf("lookout's /lookout-ui-config.js does not start with %q: %q", uiConfigPrefix, b.String())
	}
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return cfg, errors.Wrapf(err, "cannot parse Lookout's UI config %q", js)
	}
	return cfg, nil
}

// client is an HTTP client that reaches Lookout's URL through the
// composed names and trusts only its CA.
func (l Lookout) client() (*http.Client, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return l.Names.Dial(ctx, addr)
		},
	}
	if len(l.CA) > 0 {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(l.CA) {
			return nil, errors.New("cannot parse Lookout's CA: no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}, nil
}

// LookoutBrowser is how a browser on this machine reaches the claim's
// Lookout l, as a person's on a machine whose DNS resolves the composed
// names: each name the page reaches (Lookout, the server's REST API and
// the binoculars of the executor's cluster clusterID, as Lookout's UI
// config names them) resolves to where the composed Service is, and each
// server's certificate is trusted once verified against the claim's CA,
// as with the CA installed. A name no composed Service answers is an
// error; a server that does not answer TLS is left out, for the page's
// calls to fail and its checks to say so (notes says which).
func LookoutBrowser(ctx context.Context, l Lookout, clusterID string) (o browser.Options, notes []string, err error) {
	cfg, err := GetLookoutUIConfig(ctx, l)
	if err != nil {
		return o, nil, err
	}
	o.Hosts = map[string]string{}
	for _, u := range []string{l.URL, cfg.ArmadaAPIBaseURL, strings.ReplaceAll(cfg.BinocularsBaseURLPattern, "{CLUSTER_ID}", clusterID)} {
		pu, err := url.Parse(u)
		if err != nil {
			return o, nil, errors.Wrapf(err, "lookout's UI config names %q", u)
		}
		ip, ok := l.Names.Lookup(pu.Hostname())
		if !ok {
			return o, nil, errors.Errorf("lookout's UI config names %s, which no composed Service answers", u)
		}
		o.Hosts[pu.Hostname()] = ip
		if pu.Scheme != "https" {
			continue
		}
		spki, err := browser.SPKIOf(ctx, l.Names.Dial, pu.Host, pu.Hostname(), l.CA)
		if err != nil {
			notes = append(notes, fmt.Sprintf("lookout's UI config names %s: %v", u, err))
			continue
		}
		o.SPKIs = append(o.SPKIs, spki)
	}
	return o, notes, nil
}

// ScreenshotsReleaseFile is the file beside the Lookout screenshots
// (make docs-screenshots) that names the Armada release whose UI they
// show; make docs-check refuses screenshots of another release than the
// default one.
const ScreenshotsReleaseFile = "lookout-ui.release"

// ScreenshotsRelease is ScreenshotsReleaseFile's content for screenshots
// of Armada release v ("0.22.8").
func ScreenshotsRelease(v string) string { return "Armada " + v + "\n" }
