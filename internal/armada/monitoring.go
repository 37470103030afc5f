package armada

import (
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// prometheus-operator's API, pinned to what the offline validation checks
// the monitors and rules against (internal/harness/thirdparty).
const (
	apiMonitoring = "monitoring.coreos.com/v1"

	// labelHeadless marks the headless Service of a leader-elected
	// component, which selects the same pods as its ClusterIP Service: a
	// ServiceMonitor excludes it so that no pod is scraped twice.
	labelHeadless = "armadaproject.io/headless"

	// Target labels every scraped series gets, so that rules and
	// dashboards select exactly this installation's components.
	targetInstance  = "armada_instance"
	targetComponent = "armada_component"

	// portNameMetrics names the metrics port on every Service.
	portNameMetrics = "metrics"
)

// monitoring is the resolved spec.monitoring: what to compose.
func (in *Install) monitoring() *v1alpha1.Monitoring { return &in.Spec.Monitoring }

func (in *Install) serviceMonitorsOn() bool {
	m := in.monitoring()
	return m.Enabled && *m.ServiceMonitors
}

func (in *Install) alertsOn() bool {
	m := in.monitoring()
	return m.Enabled && *m.Alerts.Enabled
}

func (in *Install) dashboardsOn() bool {
	m := in.monitoring()
	return m.Enabled && *m.Dashboards.Enabled
}

// ingesterLag is true when the ingesters measure their Pulsar processing
// delay: with monitoring on. Pulsar's admin URL, which the delay monitor
// needs, is always known (validation requires it for an external Pulsar).
func (in *Install) ingesterLag() bool { return in.monitoring().Enabled }

// monitoringLabels are a monitoring object's labels: the user's, then
// ours, which keep the app.kubernetes.io keys (the XRD refuses user labels
// with that prefix).
func (in *Install) monitoringLabels(component string) map[string]string {
	l := maps.Clone(in.monitoring().Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, in.labels(component))
	return l
}

// scrapeTimeout is the interval, capped at maxScrapeTimeout: Prometheus
// refuses a timeout longer than the interval.
func scrapeTimeout(interval string) string {
	d, err := time.ParseDuration(interval)
	if err != nil || d > maxScrapeTimeout {
		return maxScrapeTimeout.String()
	}
	return interval
}

// selector is the PromQL label matchers of this installation's series,
// plus extra matchers.
func (in *Install) promSelector(extra ...string) string {
	m := append([]string{`namespace="` + in.Namespace + `"`, targetInstance + `="` + in.Name + `"`}, extra...)
	return "{" + strings.Join(m, ",") + "}"
}

// serviceMonitor scrapes one instance's metrics port through its Service,
// selecting exactly that Service.
func (in *Install) serviceMonitor(inst *instance) *unstructured.Unstructured {
	m := in.monitoring()
	u := in.unstructuredObject(apiMonitoring, "ServiceMonitor", in.object(inst.Name), inst.Name, map[string]any{
		"selector": map[string]any{
			"matchLabels":      stringMap(in.selector(inst.Name)),
			"matchExpressions": []any{map[string]any{"key": labelHeadless, "operator": "DoesNotExist"}},
		},
		"namespaceSelector": map[string]any{"matchNames": []any{in.Namespace}},
		"endpoints": []any{map[string]any{
			"port":          portNameMetrics,
			"path":          "/metrics",
			"interval":      m.ScrapeInterval,
			"scrapeTimeout": scrapeTimeout(m.ScrapeInterval),
			"relabelings": []any{
				map[string]any{"action": "replace", "targetLabel": targetInstance, "replacement": in.Name},
				map[string]any{"action": "replace", "targetLabel": targetComponent, "replacement": inst.Name},
			},
		}},
	})
	u.SetLabels(in.monitoringLabels(inst.Name))
	return u
}

// stringMap converts labels to the JSON-compatible map an unstructured
// object holds.
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// monitoring composes the ServiceMonitors, the PrometheusRule and the
// dashboards that spec.monitoring asks for, and reports them in status.
func (r *renderer) monitoring(insts []*instance) error {
	in := r.in
	st := v1alpha1.MonitoringStatus{Composed: in.monitoring().Enabled}
	if !st.Composed {
		r.out.Status.Monitoring = st
		return nil
	}
	// Every monitoring object carries these: the user's labels and ours
	// but the per-component one.
	st.Labels = in.monitoringLabels("")
	delete(st.Labels, labelComponent)
	if in.serviceMonitorsOn() {
		for _, inst := range insts {
			key := inst.Name + "-servicemonitor"
			sm := in.serviceMonitor(inst)
			// A remote executor is scraped in its own cluster.
			r.addTo(remoteCluster(inst.Executor), key, sm, r.exists(key))
			st.ServiceMonitors = append(st.ServiceMonitors, sm.GetName())
		}
	}
	if in.alertsOn() {
		rule := in.prometheusRule(insts)
		r.add("prometheusrule", rule, r.exists("prometheusrule"))
		st.PrometheusRule = rule.GetName()
	}
	if in.dashboardsOn() {
		for _, d := range dashboardTable {
			cm, err := in.dashboardConfigMap(d)
			if err != nil {
				return err
			}
			key := "dashboard-" + d.Name
			r.add(key, cm, r.exists(key))
			st.Dashboards = append(st.Dashboards, cm.Name)
		}
	}
	r.out.Status.Monitoring = st
	return nil
}
