package armada

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// An alertRule is one Prometheus alerting rule.
type alertRule struct {
	Name string
	// Severity is critical (page someone) or warning (look today).
	Severity string
	// For is how long the expression must hold before the alert fires.
	For string
	// Expr is the PromQL expression; every series it returns alerts.
	Expr string
	// Summary and Description are what the person on call reads.
	Summary, Description string
}

const (
	severityCritical = "critical"
	severityWarning  = "warning"

	// How long conditions must hold before an alert fires.
	holdShort  = "5m"
	holdMedium = "10m"
	holdLong   = "15m"
)

// Metric names the rules and dashboards use, each registered by Armada
// v0.22.7 (internal/armada's TestMetricNames checks them in its source).
const (
	metricLeaderStatus     = "armada_scheduler_leader_status"
	metricCycleTimes       = "armada_scheduler_schedule_cycle_times"
	metricScheduleOutcome  = "armada_scheduler_schedule_outcome"
	metricQueueSize        = "armada_queue_size"
	metricClusterCapacity  = "armada_cluster_capacity"
	metricClusterAvailable = "armada_cluster_available_capacity"
	metricClusterCordoned  = "armada_cluster_cordoned_status"
	metricGRPCClient       = "grpc_client_handled_total"
	ingesterDelay          = "pulsar_message_processing_delay"
	ingesterDBErrors       = "db_errors"
	ingesterPulsarErrors   = "pulsar_connection_errors"
	// kube-state-metrics' CronJob series (docs/metrics/workload/
	// cronjob-metrics.md, all STABLE), labelled with the CronJob's
	// namespace and name: the restore drill's outcome.
	ksmCronJobLastSchedule   = "kube_cronjob_status_last_schedule_time"
	ksmCronJobLastSuccessful = "kube_cronjob_status_last_successful_time"
	ksmCronJobCreated        = "kube_cronjob_created"
	ksmCronJobActive         = "kube_cronjob_status_active"
	// executorAPI is the scheduler's gRPC service executors call
	// (pkg/executorapi/executorapi.proto).
	executorAPI = "executorapi.ExecutorApi"
)

// alertScope is what the alert expressions of one installation are built
// from. Every expression selects only this installation's series through
// the target labels its ServiceMonitors add.
type alertScope struct {
	in *Install
	a  v1alpha1.MonitoringAlerts
	ns string
	// absent has one absent(up) per instance.
	absent []string
	// executors are the executor instances; ingesters the ingesters'
	// metric prefixes.
	executors, ingesters []string
}

// alertRules are the alerts of one installation.
func (in *Install) alertRules(insts []*instance) []alertRule {
	sc := &alertScope{in: in, a: in.monitoring().Alerts, ns: in.Namespace, absent: make([]string, 0, len(insts))}
	for _, inst := range insts {
		sc.absent = append(sc.absent, fmt.Sprintf("absent(up%s)", in.promSelector(targetComponent+`="`+inst.Name+`"`)))
		if inst.PerExecutor {
			sc.executors = append(sc.executors, inst.Name)
		}
		if inst.IngesterMetrics != "" {
			sc.ingesters = append(sc.ingesters, inst.IngesterMetrics)
		}
	}
	return slices.Concat(sc.componentAlerts(), sc.schedulerAlerts(), sc.ingesterAlerts(), sc.executorAlerts(), sc.drillAlerts())
}

func (sc *alertScope) sel(extra ...string) string { return sc.in.promSelector(extra...) }

// perIngester applies fn to each ingester's metric with suffix, joined
// with "or".
func (sc *alertScope) perIngester(fn, suffix string) string {
	parts := make([]string, 0, len(sc.ingesters))
	for _, p := range sc.ingesters {
		parts = append(parts, fmt.Sprintf(fn, p+suffix+sc.sel()))
	}
	return strings.Join(parts, " or ")
}

// pods is the kubectl command listing a component's pods.
func (sc *alertScope) pods(component string) string {
	return fmt.Sprintf("kubectl -n %s get pods -l app.kubernetes.io/instance=%s,app.kubernetes.io/component=%s", sc.ns, sc.in.Name, component)
}

// componentAlerts watch every component's scrape target.
func (sc *alertScope) componentAlerts() []alertRule {
	in, ns, sel, pods := sc.in, sc.ns, sc.sel, sc.pods
	return []alertRule{
		{
			Name: "ArmadaComponentDown", Severity: severityCritical, For: holdShort,
			Expr:    fmt.Sprintf("up%s == 0", sel()),
			Summary: "Armada {{ $labels.armada_component }} is down or its metrics cannot be scraped",
			Description: "Prometheus has failed to scrape {{ $labels.armada_component }} (pod {{ $labels.pod }}) in namespace " + ns +
				" for 5 minutes. Check the pod: " + pods("{{ $labels.armada_component }}") +
				"; describe it for crash loops, OOM kills or failing probes, and read its logs for the error that stopped it.",
		},
		{
			Name: "ArmadaComponentNotScraped", Severity: severityWarning, For: holdLong,
			Expr:    strings.Join(sc.absent, " or "),
			Summary: "Prometheus has no target for Armada {{ $labels.armada_component }}",
			Description: "No Prometheus target for {{ $labels.armada_component }} of Armada " + in.Name + " in namespace " + ns +
				" for 15 minutes. Either the component has no running pod (" + pods("{{ $labels.armada_component }}") +
				") or the Prometheus does not select its ServiceMonitor: compare the Prometheus's serviceMonitorSelector and " +
				"serviceMonitorNamespaceSelector with the labels in the claim's status.monitoring.labels.",
		},
	}
}

// schedulerAlerts watch leadership, scheduling cycles and queues.
func (sc *alertScope) schedulerAlerts() []alertRule {
	in, a, ns, sel, pods := sc.in, sc.a, sc.ns, sc.sel, sc.pods
	return []alertRule{
		{
			Name: "ArmadaSchedulerNoLeader", Severity: severityCritical, For: holdShort,
			Expr:    fmt.Sprintf("(max(%s%s) or vector(0)) < 1", metricLeaderStatus, sel()),
			Summary: "No Armada scheduler is leader: no jobs are being scheduled",
			Description: "No scheduler replica of Armada " + in.Name + " in namespace " + ns + " has reported itself leader for 5 minutes, " +
				"so no job is scheduled. Check the scheduler pods (" + pods("scheduler") + ") and their logs; with more than one " +
				"replica, check the Lease " + in.object("scheduler") + " (kubectl -n " + ns + " get lease " + in.object("scheduler") +
				") and that the scheduler's service account may update it.",
		},
		{
			Name: "ArmadaSchedulingCycleSlow", Severity: severityWarning, For: holdLong,
			Expr: fmt.Sprintf("histogram_quantile(0.95, sum by (le) (rate(%s_bucket%s[10m]))) > %d",
				metricCycleTimes, sel(), a.SchedulingCycleSeconds*1000),
			Summary: "Armada scheduling cycles are slow (95th percentile {{ $value | humanize }} ms)",
			Description: fmt.Sprintf("The 95th percentile of the scheduler's cycle time has been above %d s for 15 minutes, "+
				"so jobs wait longer to be scheduled. Look for a large backlog (the queue dashboard), many executors or nodes, "+
				"or a slow scheduler database; raise the scheduler's CPU (spec.components.scheduler.resources) or tune "+
				"scheduling.maximumSchedulingRate. Threshold: spec.monitoring.alerts.schedulingCycleSeconds.", a.SchedulingCycleSeconds),
		},
		{
			Name: "ArmadaSchedulingCyclesFailing", Severity: severityCritical, For: holdMedium,
			Expr: fmt.Sprintf(`sum(increase(%s%s[10m])) > 0 unless sum(increase(%s%s[10m])) > 0`,
				metricScheduleOutcome, sel(`outcome="failure"`), metricScheduleOutcome, sel(`outcome="success"`)),
			Summary: "Every Armada scheduling cycle is failing",
			Description: "The scheduler has completed no successful scheduling cycle for 10 minutes while cycles fail. " +
				"Read the leader's log for the cycle error (" + pods("scheduler") + "); a failing database or Pulsar " +
				"connection or an invalid scheduling config are the usual causes.",
		},
		{
			Name: "ArmadaQueueBacklog", Severity: severityWarning, For: fmt.Sprintf("%dm", a.QueueBacklogMinutes),
			Expr:    fmt.Sprintf("sum by (queue) (max by (queue, state) (%s%s)) > %d", metricQueueSize, sel(), a.QueuedJobs),
			Summary: "Armada queue {{ $labels.queue }} has {{ $value }} queued jobs",
			Description: fmt.Sprintf("Queue {{ $labels.queue }} has held more than %d queued jobs for %d minutes. Check its "+
				"share and limits in the queue dashboard, whether its jobs fit any node (resources, tolerations, pools), and "+
				"whether executors have free capacity. Thresholds: spec.monitoring.alerts.queuedJobs and queueBacklogMinutes.",
				a.QueuedJobs, a.QueueBacklogMinutes),
		},
	}
}

// ingesterAlerts watch the three ingesters' lag and errors.
func (sc *alertScope) ingesterAlerts() []alertRule {
	in, a := sc.in, sc.a
	return []alertRule{
		{
			Name: "ArmadaIngesterLagging", Severity: severityWarning, For: holdMedium,
			Expr: fmt.Sprintf("max by (armada_component) (%s) > %d",
				sc.perIngester("%s", ingesterDelay), a.IngesterLagSeconds*1000),
			Summary: "Armada {{ $labels.armada_component }} is {{ $value | humanizeDuration }} behind Pulsar",
			Description: fmt.Sprintf("{{ $labels.armada_component }} has processed Pulsar events more than %d s after they were "+
				"published for 10 minutes, so job states in the scheduler, Lookout or the watch API are stale. Check its "+
				"database (slow writes show as database errors or high latency), its CPU and memory, and scale it with "+
				"spec.components.<ingester>.replicas. Threshold: spec.monitoring.alerts.ingesterLagSeconds.", a.IngesterLagSeconds),
		},
		{
			Name: "ArmadaIngesterDatabaseErrors", Severity: severityWarning, For: holdMedium,
			Expr:    fmt.Sprintf("sum by (armada_component) (%s) > 0", sc.perIngester("increase(%s[10m])", ingesterDBErrors)),
			Summary: "Armada {{ $labels.armada_component }} fails to write to its database",
			Description: "{{ $labels.armada_component }} has reported database errors for 10 minutes, so events are not " +
				"written to PostgreSQL (scheduler and lookout ingesters) or Redis (event ingester) and the scheduler, Lookout " +
				"or job watchers fall behind. Check the database's health, connections and disk, and the component's log.",
		},
		{
			Name: "ArmadaIngesterPulsarErrors", Severity: severityWarning, For: holdMedium,
			Expr:    fmt.Sprintf("sum by (armada_component) (%s) > 0", sc.perIngester("increase(%s[10m])", ingesterPulsarErrors)),
			Summary: "Armada {{ $labels.armada_component }} cannot connect to Pulsar",
			Description: "{{ $labels.armada_component }} has reported Pulsar connection errors for 10 minutes and consumes " +
				"no events. Check that Pulsar's brokers are up and reachable at " + in.Spec.Pulsar.URL +
				", and, with a token, that spec.pulsar.tokenSecretRef holds a valid one.",
		},
	}
}

// executorAlerts watch executors' link to the scheduler and capacity.
func (sc *alertScope) executorAlerts() []alertRule {
	sel := sc.sel
	execSel := sel(targetComponent+`=~"`+strings.Join(sc.executors, "|")+`"`, `grpc_service="`+executorAPI+`"`)
	execOK := strings.Replace(execSel, "}", `,grpc_code="OK"}`, 1)
	execFailed := strings.Replace(execSel, "}", `,grpc_code!="OK"}`, 1)
	return []alertRule{
		{
			Name: "ArmadaExecutorLostScheduler", Severity: severityCritical, For: holdMedium,
			Expr: fmt.Sprintf("sum by (armada_component) (increase(%s%s[10m])) > 0 unless sum by (armada_component) (increase(%s%s[10m])) > 0",
				metricGRPCClient, execFailed, metricGRPCClient, execOK),
			Summary: "Armada {{ $labels.armada_component }} cannot reach the scheduler: its heartbeat is lost",
			Description: "Every call from {{ $labels.armada_component }} to the scheduler's ExecutorApi has failed for 10 minutes, " +
				"so the scheduler sees no heartbeat and, once the last one is older than its scheduling.executorTimeout " +
				"(10m by default), leases it no new jobs. " +
				"Check the executor's log for the gRPC error, that the scheduler is up, and the executor's credentials " +
				"(execute_jobs permission).",
		},
		{
			Name: "ArmadaClusterNoCapacity", Severity: severityWarning, For: holdLong,
			Expr: fmt.Sprintf("max by (cluster) (%s%s) unless on (cluster) (sum by (cluster) (%s%s) > 0)",
				metricClusterCordoned, sel(), metricClusterCapacity, sel(`resourceType="cpu"`)),
			Summary: "Armada executor cluster {{ $labels.cluster }} reports no capacity",
			Description: "The scheduler knows executor cluster {{ $labels.cluster }} but it has reported no schedulable CPU for " +
				"15 minutes, so nothing runs there. Check that the executor runs, that its nodes are Ready and not tainted " +
				"against Armada's jobs, and that they are in a pool listed in spec.scheduling.pools.",
		},
	}
}

// prometheusRule holds the installation's alerts in one group.
func (in *Install) prometheusRule(insts []*instance) *unstructured.Unstructured {
	rules := in.alertRules(insts)
	out := make([]any, 0, len(rules))
	for _, r := range rules {
		out = append(out, map[string]any{
			"alert":  r.Name,
			"expr":   r.Expr,
			"for":    r.For,
			"labels": map[string]any{"severity": r.Severity, "namespace": in.Namespace, targetInstance: in.Name},
			"annotations": map[string]any{
				"summary":     r.Summary,
				"description": r.Description,
			},
		})
	}
	u := in.unstructuredObject(apiMonitoring, "PrometheusRule", in.object("alerts"), "monitoring", map[string]any{
		"groups": []any{map[string]any{"name": "armada-" + in.Namespace + "-" + in.Name, "rules": out}},
	})
	u.SetLabels(in.monitoringLabels("monitoring"))
	return u
}

// drillAlerts watch the restore drill through kube-state-metrics' series
// of its CronJob: the newest run ended without success, or no run has
// succeeded for longer than maxAge (counted from the CronJob's creation
// before the first).
func (sc *alertScope) drillAlerts() []alertRule {
	in := sc.in
	if !in.drillOn() {
		return nil
	}
	d := in.Spec.Postgres.Backup.RestoreDrill
	maxAge, _ := time.ParseDuration(d.MaxAge)
	name := in.object(drillName)
	sel := `{namespace="` + sc.ns + `",cronjob="` + name + `"}`
	by := "max by (namespace, cronjob) "
	verified := fmt.Sprintf("%s(%s%s or %s%s)", by, ksmCronJobLastSuccessful, sel, ksmCronJobCreated, sel)
	logs := fmt.Sprintf("kubectl -n %s logs -l %s=%s,%s=%s --tail=20", sc.ns, labelInstance, in.Name, labelComponent, drillName)
	return []alertRule{
		{
			Name: "ArmadaRestoreDrillFailed", Severity: severityWarning, For: holdShort,
			Expr: fmt.Sprintf("%s(%s%s) > %s unless on (namespace, cronjob) %s%s > 0",
				by, ksmCronJobLastSchedule, sel, verified, ksmCronJobActive, sel),
			Summary: "The restore drill of Armada " + in.Name + "'s PostgreSQL backup failed",
			Description: "The newest run of the CronJob " + name + " in namespace " + sc.ns + " ended without restoring and checking the newest " +
				"backup, so it is not known to restore. Its pod's log says why (" + logs + "): no completed backup, an object missing " +
				"or damaged in the bucket, credentials, or a restored schema or job table that does not match the running database. " +
				"The claim's RestoreDrill condition says the same.",
		},
		{
			Name: "ArmadaRestoreDrillOverdue", Severity: severityWarning, For: holdLong,
			Expr:    fmt.Sprintf("time() - %s > %d", verified, int64(maxAge.Seconds())),
			Summary: "No restore of Armada " + in.Name + "'s PostgreSQL backup has been verified for {{ $value | humanizeDuration }}",
			Description: "The CronJob " + name + " in namespace " + sc.ns + " has not completed a restore drill for longer than " +
				"spec.postgres.backup.restoreDrill.maxAge (" + d.MaxAge + "). Check that it runs (kubectl -n " + sc.ns + " get cronjob " + name +
				"), that it is not suspended, and the log of its last pod (" + logs + ").",
		},
	}
}
