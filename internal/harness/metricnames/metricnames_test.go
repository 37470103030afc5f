package metricnames

import (
	"os"
	"path/filepath"
	"testing"
)

// src registers metrics in each way Armada and its libraries do.
const src = `package m

import "github.com/prometheus/client_golang/prometheus"

const Prefix = "armada_x_"

var a = prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "literal_total"})
var b = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ns", Subsystem: "sub", Name: "joined"})
var c = prometheus.NewDesc(Prefix+"desc", "", nil, nil)

func withPrefix(prefix string) *prometheus.Desc { return prometheus.NewDesc(prefix+"param_suffix", "", nil, nil) }

func middle(name string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + name + "_cache_size"})
}

func collector(namespace, subsystem string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "pool_hits"), "", nil, nil)
}

func use() {
	withPrefix("armada_y_")
	middle("submitted_job")
	collector("armada", "redis")
}
`

func TestScan(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		"armada_x_literal_total":            true,
		"ns_sub_joined":                     true,
		"armada_x_desc":                     true,
		"armada_y_param_suffix":             true,
		"armada_x_submitted_job_cache_size": true,
		"armada_redis_pool_hits":            true,
		"armada_x_desc_bucket":              true,
		"armada_x_literal":                  false,
		"armada_z_param_suffix":             false,
		"armada_x_other_job_cache_size":     false,
		"armada_other_pool_hits":            false,
		"joined":                            false,
	}
	for name, want := range cases {
		if got := x.Lookup(name) != ""; got != want {
			t.Errorf("Lookup(%q) found = %t, want %t (%s)", name, got, want, x.Lookup(name))
		}
	}
}
