package armada

import (
	"context"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// This file evaluates the rendered alerts with Prometheus's own PromQL
// parser and engine (github.com/prometheus/prometheus, pinned in go.mod),
// over synthetic series held in memory, the way `promtool test rules`
// does: series sampled every minute, the rule evaluated every minute, and
// an alert firing once its expression has returned the same series for
// its whole `for` duration.

// evalInterval is the rule evaluation interval, as promtool's default.
const evalInterval = time.Minute

// sample is one float sample.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                    { return s.t }
func (s sample) F() float64                  { return s.f }
func (sample) H() *histogram.Histogram       { return nil }
func (sample) FH() *histogram.FloatHistogram { return nil }
func (sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample         { return s }

// memStorage is a read-only storage of whole series.
type memStorage []storage.Series

func (m memStorage) Querier(_, _ int64) (storage.Querier, error) {
	return &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
		for _, s := range m {
			lset := s.Labels()
			if !slices.ContainsFunc(ms, func(m *labels.Matcher) bool { return !m.Matches(lset.Get(m.Name)) }) {
				out = append(out, s)
			}
		}
		sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].Labels(), out[j].Labels()) < 0 })
		return &seriesSet{series: out}
	}}, nil
}

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                      { s.i++; return s.i <= len(s.series) }
func (s *seriesSet) At() storage.Series              { return s.series[s.i-1] }
func (*seriesSet) Err() error                        { return nil }
func (*seriesSet) Warnings() annotations.Annotations { return nil }

// series is one synthetic series: its metric in PromQL notation and its
// value at each minute (NaN: no sample).
type series struct {
	metric string
	value  func(minute int) float64
}

// toStorage samples every series once a minute for minutes minutes.
func toStorage(t *testing.T, ss []series, minutes int) memStorage {
	t.Helper()
	out := make(memStorage, 0, len(ss))
	for _, s := range ss {
		lset, err := parser.ParseMetric(s.metric)
		if err != nil {
			t.Fatalf("series %s: %v", s.metric, err)
		}
		var samples []chunks.Sample
		for m := 0; m <= minutes; m++ {
			if v := s.value(m); !math.IsNaN(v) {
				samples = append(samples, sample{t: int64(m) * evalInterval.Milliseconds(), f: v})
			}
		}
		out = append(out, storage.NewListSeries(lset, samples))
	}
	return out
}

// firing evaluates an alert every minute up to minutes and returns the
// label sets of the alerts firing at the end, as Prometheus's rule
// manager would: a series must be returned at every evaluation for the
// rule's `for` duration.
func firing(t *testing.T, r alertRule, st memStorage, minutes int) []string {
	t.Helper()
	hold, err := model.ParseDuration(r.For)
	if err != nil {
		t.Fatalf("%s: for %q: %v", r.Name, r.For, err)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	activeAt := map[string]int{}
	end := minutes
	var last []string
	for m := 0; m <= end; m++ {
		ts := time.UnixMilli(0).Add(time.Duration(m) * evalInterval)
		q, err := engine.NewInstantQuery(context.Background(), st, nil, r.Expr, ts)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s at minute %d: %v", r.Name, m, res.Err)
		}
		vec, err := res.Vector()
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		seen := map[string]int{}
		last = last[:0]
		for _, s := range vec {
			k := s.Metric.DropReserved(func(n string) bool { return n == model.MetricNameLabel }).String()
			start, ok := activeAt[k]
			if !ok {
				start = m
			}
			seen[k] = start
			if time.Duration(m-start)*evalInterval >= time.Duration(hold) {
				last = append(last, k)
			}
		}
		activeAt = seen
		q.Close()
	}
	sort.Strings(last)
	return last
}
