package armada

import (
	"sort"
	"strings"
	"testing"

	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/armadaproject/armada-crossplane/internal/harness/metricnames"
)

// TestMetricNames is the "no invented metrics" check: every metric name an
// alert or dashboard panel uses must be registered in the source of every
// supported Armada release's binaries (or be Prometheus's own `up`). It
// lists each name and how it was found, and fails on any unknown one.
func TestMetricNames(t *testing.T) {
	for _, r := range Releases {
		t.Run(r.Version, func(t *testing.T) { checkMetricNames(t, r.Version) })
	}
}

func checkMetricNames(t *testing.T, version string) {
	t.Helper()
	dirs, err := metricnames.SourceDirs(t.Context(), "v"+version)
	if err != nil {
		t.Fatal(err)
	}
	x, err := metricnames.Scan(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	full, templates, prefixes := x.Counts()
	t.Logf("source index: %d complete names, %d templates, %d template values", full, templates, prefixes)
	used := map[string][]string{}
	for _, e := range renderedExprs(t) {
		parsed, err := promparser.ParseExpr(e.Expr)
		if err != nil {
			t.Fatalf("%s: %v", e.Where, err)
		}
		promparser.Inspect(parsed, func(n promparser.Node, _ []promparser.Node) error {
			if vs, ok := n.(*promparser.VectorSelector); ok {
				used[vs.Name] = append(used[vs.Name], e.Where)
			}
			return nil
		})
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	unknown := 0
	for _, n := range names {
		how := x.Lookup(n)
		if metricnames.PrometheusOwn[n] {
			how = "created by Prometheus for every target"
		}
		if metricnames.KubeStateMetrics[n] {
			how = "a kube-state-metrics CronJob series"
		}
		if how == "" {
			unknown++
			t.Errorf("UNKNOWN %s (used by %s): not registered in Armada's source", n, strings.Join(used[n], "; "))
			continue
		}
		t.Logf("ok %s: %s", n, how)
	}
	t.Logf("%d metric names checked, %d unknown", len(names), unknown)
}
