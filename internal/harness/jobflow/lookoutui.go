package jobflow

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
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
