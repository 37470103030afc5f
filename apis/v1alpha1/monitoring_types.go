package v1alpha1

// Monitoring composes what a Prometheus and a Grafana need to watch this
// Armada: a prometheus-operator ServiceMonitor per component, a
// PrometheusRule of alerts and Grafana dashboards. The prometheus-operator
// CRDs (monitoring.coreos.com/v1) must be installed to apply the monitors
// and rules; the dashboards are plain ConfigMaps.
type Monitoring struct {
	// Enabled composes the monitoring objects. Off by default. Every
	// component's metrics port is set explicitly and exposed on its
	// Service whether or not this is on.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// ServiceMonitors composes one ServiceMonitor per component, each
	// selecting exactly that component's Service. Defaults to true.
	// +optional
	ServiceMonitors *bool `json:"serviceMonitors,omitempty"`

	// Labels are added to every monitoring object (ServiceMonitors,
	// PrometheusRule, dashboard ConfigMaps), so that a Prometheus's
	// serviceMonitorSelector and ruleSelector, for example
	// {release: kube-prometheus-stack}, pick them up.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('app.kubernetes.io/'))",message="spec.monitoring.labels cannot set app.kubernetes.io/ labels: the function sets them"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// ScrapeInterval of every component, as a Prometheus duration such as
	// 15s or 1m. Defaults to 15s, as Armada's charts scrape.
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*(s|m)$`
	// +kubebuilder:validation:MaxLength=8
	// +optional
	ScrapeInterval string `json:"scrapeInterval,omitempty"`

	// Alerts configures the PrometheusRule of alerts.
	// +optional
	Alerts MonitoringAlerts `json:"alerts,omitempty"`

	// Dashboards configures the Grafana dashboards.
	// +optional
	Dashboards MonitoringDashboards `json:"dashboards,omitempty"`
}

// MonitoringAlerts configures the alerting rules and their thresholds.
type MonitoringAlerts struct {
	// Enabled composes the PrometheusRule. Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// SchedulingCycleSeconds is the 95th percentile of the scheduler's
	// cycle time above which ArmadaSchedulingCycleSlow fires. Defaults
	// to 30.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	SchedulingCycleSeconds int32 `json:"schedulingCycleSeconds,omitempty"`

	// IngesterLagSeconds is the Pulsar processing delay above which
	// ArmadaIngesterLagging fires. With monitoring on, the ingesters
	// measure their delay through Pulsar's admin API (spec.pulsar.adminURL),
	// which they then need to reach to start. Defaults to 300.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	IngesterLagSeconds int32 `json:"ingesterLagSeconds,omitempty"`

	// QueuedJobs is the number of queued jobs above which a queue counts
	// as full for ArmadaQueueBacklog. Defaults to 1000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	QueuedJobs int32 `json:"queuedJobs,omitempty"`

	// QueueBacklogMinutes is how long a queue must stay full before
	// ArmadaQueueBacklog fires. Defaults to 60.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10080
	// +optional
	QueueBacklogMinutes int32 `json:"queueBacklogMinutes,omitempty"`
}

// MonitoringDashboards configures the Grafana dashboards.
type MonitoringDashboards struct {
	// Enabled composes the dashboards as ConfigMaps labelled
	// grafana_dashboard: "1", which Grafana's dashboard sidecar loads.
	// Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// MonitoringStatus reports what monitoring is composed.
type MonitoringStatus struct {
	// Composed is true when spec.monitoring.enabled is and the monitoring
	// objects are composed.
	Composed bool `json:"composed"`
	// Labels every composed monitoring object carries: a Prometheus whose
	// serviceMonitorSelector and ruleSelector match them picks them up.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// ServiceMonitors, PrometheusRule and Dashboards name the composed
	// objects, in spec.namespace.
	// +optional
	ServiceMonitors []string `json:"serviceMonitors,omitempty"`
	// +optional
	PrometheusRule string `json:"prometheusRule,omitempty"`
	// +optional
	Dashboards []string `json:"dashboards,omitempty"`
}
