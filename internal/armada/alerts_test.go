package armada

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// alertMinutes is how long each synthetic scenario runs: longer than the
// longest `for` of the rules under test.
const alertMinutes = 100

// Value shapes of synthetic series.
func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func perMinute(v float64) func(int) float64 { return func(m int) float64 { return v * float64(m) } }

// target is a metric as a ServiceMonitor of the monitored() install
// labels it when scraping instance component.
func target(component, metric string, extra ...string) string {
	ls := append([]string{`namespace="armada"`, `armada_instance="armada"`, `armada_component="` + component + `"`, `pod="` + component + `-0"`}, extra...)
	return metric + "{" + strings.Join(ls, ",") + "}"
}

// healthyUp is every instance of monitored() up.
func healthyUp(except ...string) []series {
	var out []series
	for _, c := range []string{"server", "scheduler", "scheduler-ingester", "lookout", "lookout-ingester", "event-ingester", "binoculars", "executor-a", "executor-b"} {
		if !slices.Contains(except, c) {
			out = append(out, series{target(c, "up"), constant(1)})
		}
	}
	return out
}

func cycleTimes(fastPerMinute, slowPerMinute float64) []series {
	b := func(le string) string { return target("scheduler", metricCycleTimes+"_bucket", `le="`+le+`"`) }
	return []series{
		{b("1000"), perMinute(fastPerMinute)},
		{b("60000"), perMinute(fastPerMinute + slowPerMinute)},
		{b("+Inf"), perMinute(fastPerMinute + slowPerMinute)},
	}
}

func executorCalls(component string, okPerMinute, failedPerMinute float64) []series {
	c := func(code string) string {
		return target(component, metricGRPCClient, `grpc_service="`+executorAPI+`"`, `grpc_method="LeaseJobRuns"`, `grpc_type="server_stream"`, `grpc_code="`+code+`"`)
	}
	return []series{{c("OK"), perMinute(okPerMinute)}, {c("Unavailable"), perMinute(failedPerMinute)}}
}

func clusters(capacity map[string]float64) []series {
	var out []series
	for _, cl := range []string{"a", "b"} {
		out = append(out, series{target("scheduler", metricClusterCordoned, `cluster="`+cl+`"`, `reason=""`, `setByUser=""`), constant(0)})
		if v, ok := capacity[cl]; ok {
			out = append(out, series{target("scheduler", metricClusterCapacity, `cluster="`+cl+`"`, `pool="cpu"`, `resourceType="cpu"`, `nodeType="n"`), constant(v)})
		}
	}
	return out
}

// TestAlerts proves every rendered alert the way `promtool test rules`
// does: it fires, with the labels a person on call needs, on a synthetic
// bad series, and stays silent on a healthy one.
func TestAlerts(t *testing.T) {
	in, errs := New(claimed(monitored(withBackups)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rules := map[string]alertRule{}
	for _, r := range in.alertRules(instances(in)) {
		rules[r.Name] = r
	}
	lag := func(v float64) []series {
		return []series{{target("scheduler-ingester", "armada_event_ingester_armada_scheduler_ingester_"+ingesterDelay, `subscription="scheduler-ingester"`, `partition="0"`), constant(v)}}
	}
	cases := map[string]struct {
		bad, healthy []series
		// fires are the label sets firing on bad, as key=value lists.
		fires []string
		// noData: the alert also fires, the same way, with no series at all.
		noData bool
	}{
		"ArmadaComponentDown": {
			bad:     append(healthyUp("server"), series{target("server", "up"), constant(0)}),
			healthy: healthyUp(),
			fires:   []string{`armada_component="server", armada_instance="armada", namespace="armada", pod="server-0"`},
		},
		"ArmadaComponentNotScraped": {
			bad:     healthyUp("lookout"),
			healthy: healthyUp(),
			fires:   []string{`armada_component="lookout", armada_instance="armada", namespace="armada"`},
		},
		"ArmadaSchedulerNoLeader": {
			bad: []series{
				{target("scheduler", metricLeaderStatus, `name="armada-scheduler-0"`), constant(0)},
				{target("scheduler", metricLeaderStatus, `name="armada-scheduler-1"`), constant(0)},
			},
			healthy: []series{
				{target("scheduler", metricLeaderStatus, `name="armada-scheduler-0"`), constant(0)},
				{target("scheduler", metricLeaderStatus, `name="armada-scheduler-1"`), constant(1)},
			},
			fires:  []string{""},
			noData: true,
		},
		"ArmadaSchedulingCycleSlow": {
			bad:     cycleTimes(0, 10),
			healthy: cycleTimes(10, 0),
			fires:   []string{""},
		},
		"ArmadaSchedulingCyclesFailing": {
			bad: []series{
				{target("scheduler", metricScheduleOutcome, `outcome="failure"`), perMinute(6)},
				{target("scheduler", metricScheduleOutcome, `outcome="success"`), constant(40)},
			},
			healthy: []series{
				{target("scheduler", metricScheduleOutcome, `outcome="failure"`), perMinute(1)},
				{target("scheduler", metricScheduleOutcome, `outcome="success"`), perMinute(5)},
			},
			fires: []string{""},
		},
		"ArmadaIngesterDatabaseErrors": {
			bad:     []series{{target("lookout-ingester", "armada_lookout_ingester_v2_"+ingesterDBErrors, `operation="insert"`), perMinute(2)}},
			healthy: []series{{target("lookout-ingester", "armada_lookout_ingester_v2_"+ingesterDBErrors, `operation="insert"`), constant(3)}},
			fires:   []string{`armada_component="lookout-ingester"`},
		},
		"ArmadaIngesterPulsarErrors": {
			bad:     []series{{target("event-ingester", "armada_event_ingester_"+ingesterPulsarErrors), perMinute(1)}},
			healthy: []series{{target("event-ingester", "armada_event_ingester_"+ingesterPulsarErrors), constant(1)}},
			fires:   []string{`armada_component="event-ingester"`},
		},
		"ArmadaIngesterLagging": {
			bad:     lag(600_000),
			healthy: lag(2_000),
			fires:   []string{`armada_component="scheduler-ingester"`},
		},
		"ArmadaExecutorLostScheduler": {
			bad:     append(executorCalls("executor-a", 0, 3), executorCalls("executor-b", 5, 0)...),
			healthy: append(executorCalls("executor-a", 5, 1), executorCalls("executor-b", 5, 0)...),
			fires:   []string{`armada_component="executor-a"`},
		},
		"ArmadaClusterNoCapacity": {
			bad:     clusters(map[string]float64{"b": 64}),
			healthy: clusters(map[string]float64{"a": 32, "b": 64}),
			fires:   []string{`cluster="a"`},
		},
		"ArmadaRestoreDrillFailed": {
			bad:     drillSeries(1000, 500, 0),
			healthy: drillSeries(1000, 1100, 0),
			fires:   []string{`cronjob="armada-restore-drill", namespace="armada"`},
		},
		"ArmadaRestoreDrillOverdue": {
			bad:     drillSeries(-800_000, -800_000, 0),
			healthy: drillSeries(-600_000, -600_000, 0),
			fires:   []string{`cronjob="armada-restore-drill", namespace="armada"`},
		},
		"ArmadaQueueBacklog": {
			bad: []series{
				{target("scheduler", metricQueueSize, `queueName="q1"`, `queue="q1"`, `state="validated"`), constant(1500)},
				{target("scheduler", metricQueueSize, `queueName="q2"`, `queue="q2"`, `state="validated"`), constant(5)},
			},
			healthy: []series{{target("scheduler", metricQueueSize, `queueName="q1"`, `queue="q1"`, `state="validated"`), constant(10)}},
			fires:   []string{`queue="q1"`},
		},
	}
	for name, r := range rules {
		t.Run(name, func(t *testing.T) {
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("alert %s has no test case", name)
			}
			got := firing(t, r, toStorage(t, tc.bad, alertMinutes), alertMinutes)
			want := make([]string, 0, len(tc.fires))
			for _, f := range tc.fires {
				want = append(want, "{"+f+"}")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("on the bad series, firing alerts (-want +got):\n%s\nexpr: %s", diff, r.Expr)
			}
			if got := firing(t, r, nil, alertMinutes); tc.noData && !cmp.Equal(want, got) {
				t.Errorf("with no series, firing alerts %v, want %v\nexpr: %s", got, want, r.Expr)
			}
			if got := firing(t, r, toStorage(t, tc.healthy, alertMinutes), alertMinutes); len(got) > 0 {
				t.Errorf("on the healthy series, %s fires: %v\nexpr: %s", name, got, r.Expr)
			}
		})
	}
	for name := range cases {
		if _, ok := rules[name]; !ok {
			t.Errorf("test case %s names no rendered alert", name)
		}
	}
}

// TestPromQLParses proves every expression the PrometheusRule and the
// dashboards hold parses with Prometheus's own parser, and every `for`
// with its duration parser.
func TestPromQLParses(t *testing.T) {
	n := 0
	for _, e := range renderedExprs(t) {
		if _, err := parser.ParseExpr(e.Expr); err != nil {
			t.Errorf("%s: %v\n%s", e.Where, err, e.Expr)
		}
		if e.For != "" {
			if _, err := model.ParseDuration(e.For); err != nil {
				t.Errorf("%s: for %q: %v", e.Where, e.For, err)
			}
		}
		n++
	}
	t.Logf("%d PromQL expressions parse", n)
}

// expr is one PromQL expression and where it is used.
type expr struct {
	Where, Expr, For string
}

// renderedExprs are every alert and panel expression of monitored().
func renderedExprs(t *testing.T) []expr {
	t.Helper()
	in, errs := New(claimed(monitored(withBackups)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var out []expr
	for _, r := range in.alertRules(instances(in)) {
		out = append(out, expr{Where: "alert " + r.Name, Expr: r.Expr, For: r.For})
	}
	for _, d := range dashboardTable {
		for _, p := range d.Panels(in) {
			for i, q := range p.Queries {
				out = append(out, expr{Where: fmt.Sprintf("dashboard %s panel %q query %d", d.Name, p.Title, i), Expr: q.Expr})
			}
		}
	}
	return out
}

// withBackups gives monitored() an in-cluster PostgreSQL with backups, so
// the restore drill and its alerts are rendered.
func withBackups(s *v1alpha1.ArmadaSpec) {
	s.Postgres = v1alpha1.Postgres{Mode: modeInCluster, Backup: &v1alpha1.PostgresBackup{ObjectStore: store("prod")}}
}

// drillSeries are kube-state-metrics' series of the drill's CronJob, as
// scraped with its own target labels: the last start, the last success
// (none if 0) and the running Jobs. The CronJob was created at -900000.
func drillSeries(lastSchedule, lastSuccessful, active float64) []series {
	ksm := func(metric string) string {
		return metric + `{namespace="armada",cronjob="armada-restore-drill",job="kube-state-metrics",instance="10.0.0.1:8080"}`
	}
	out := []series{
		{ksm(ksmCronJobCreated), constant(-900_000)},
		{ksm(ksmCronJobLastSchedule), constant(lastSchedule)},
		{ksm(ksmCronJobActive), constant(active)},
	}
	if lastSuccessful != 0 {
		out = append(out, series{ksm(ksmCronJobLastSuccessful), constant(lastSuccessful)})
	}
	return out
}

// TestDrillFailedNotWhileRunning proves a drill that is still running
// (its CronJob has an active Job, started after the last success) does
// not alert as failed.
func TestDrillFailedNotWhileRunning(t *testing.T) {
	in, errs := New(claimed(monitored(withBackups)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, r := range in.alertRules(instances(in)) {
		if r.Name != "ArmadaRestoreDrillFailed" {
			continue
		}
		if got := firing(t, r, toStorage(t, drillSeries(2000, 1100, 1), alertMinutes), alertMinutes); len(got) > 0 {
			t.Errorf("a running drill fires %s: %v\nexpr: %s", r.Name, got, r.Expr)
		}
		return
	}
	t.Fatal("ArmadaRestoreDrillFailed is not rendered")
}
