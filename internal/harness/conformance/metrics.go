package conformance

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// metricsKey is the config key a component listens for metrics on, found
// as rendered: the port key whose effective value is the container's
// "metrics" port, which its Service and ServiceMonitor scrape.
func metricsKey(rn *Run) (string, bool) {
	if rn.Inv.MetricsPort == 0 {
		return "", false
	}
	for _, k := range portKeys {
		if v, ok := rn.Effective(k); ok && v == strconv.Itoa(int(rn.Inv.MetricsPort)) {
			return k, true
		}
	}
	return "", false
}

// scrapeMetrics GETs /metrics on the port the rendered metrics port's key
// was moved to and parses the answer as Prometheus's text format, as a
// Prometheus scraping the component's ServiceMonitor would.
func scrapeMetrics(o *outcome, rn *Run, c *Component, chk check) {
	if chk.NoScrape != "" {
		o.Notes = append(o.Notes, "metrics not scraped: "+chk.NoScrape)
		return
	}
	key, ok := metricsKey(rn)
	if !ok {
		o.errorf("no config key listens on the rendered metrics port %d", rn.Inv.MetricsPort)
		return
	}
	port, ok := c.Moved[key]
	if !ok {
		o.errorf("metrics key %s was not moved to a free port", key)
		return
	}
	families, err := scrape(port)
	if err != nil {
		o.errorf("scraping %s (rendered port %d, here %d): %v", key, rn.Inv.MetricsPort, port, err)
		return
	}
	if len(families) == 0 {
		o.errorf("metrics port %s served no metric family", key)
	}
	o.Scraped = families
	o.Notes = append(o.Notes, fmt.Sprintf("metrics port %s (rendered %d) served %d metric families", key, rn.Inv.MetricsPort, len(families)))
}

// scrape fetches and parses Prometheus text from 127.0.0.1:port/metrics,
// retrying briefly while the server starts.
func scrape(port int) ([]string, error) {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
	var last error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			last = err
			continue
		}
		ct := resp.Header.Get("Content-Type")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		_ = resp.Body.Close()
		cancel()
		switch {
		case resp.StatusCode != http.StatusOK:
			return nil, errors.Errorf("GET %s: %s", url, resp.Status)
		case !strings.HasPrefix(ct, "text/plain"):
			return nil, errors.Errorf("GET %s: Content-Type %q, not Prometheus text", url, ct)
		case err != nil:
			return nil, errors.Errorf("GET %s: not Prometheus text: %w", url, err)
		}
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, nil
	}
	return nil, last
}

// CheckScrapedNames cross-checks the source index that the "no invented
// metrics" test (internal/armada TestMetricNames) relies on: every Armada
// metric family the running binaries served must be found registered in
// Armada's source, or the index would miss real names.
func CheckScrapedNames(t *testing.T, e *Env, started map[*Run]*Component) {
	t.Helper()
	seen := map[string]bool{}
	for rn, c := range started {
		for _, n := range c.Outcome.Scraped {
			if !strings.HasPrefix(n, "armada_") || seen[n] {
				continue
			}
			seen[n] = true
			if e.Metrics.Lookup(n) == "" {
				t.Errorf("%s (%s) serves %s, which internal/harness/metricnames does not find in Armada's source", rn.ID(), rn.Inv.Component, n)
			}
		}
	}
	t.Logf("%d distinct armada_ metric families scraped from the running components, each found in Armada's source", len(seen))
}
