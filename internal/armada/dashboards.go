package armada

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// A dashboard is one Grafana dashboard: a title and its panels, each a
// PromQL query over this installation's series. The queries use no Grafana
// variables, so each parses as PromQL; only the data source is chosen in
// Grafana.
type dashboard struct {
	// Name is the ConfigMap's suffix and the dashboard file's name.
	Name  string
	Title string
	// Panels builds the panels for an installation.
	Panels func(in *Install) []panel
}

// A panel is one graph or stat.
type panel struct {
	Title string
	// Type is a Grafana panel type: timeseries or stat.
	Type string
	// Unit is a Grafana unit, e.g. ms, short, none.
	Unit    string
	Queries []query
}

// A query is one PromQL expression and how its series are named.
type query struct {
	Expr, Legend string
}

// Grafana panel types and units.
const (
	panelTimeseries = "timeseries"
	panelStat       = "stat"
	unitShort       = "short"
	unitNone        = "none"
)

// dashboardTable lists the dashboards: an overview and a queue view.
var dashboardTable = []dashboard{
	{Name: "overview", Title: "Armada overview", Panels: overviewPanels},
	{Name: "queues", Title: "Armada queues", Panels: queuePanels},
}

func overviewPanels(in *Install) []panel {
	sel := in.promSelector
	ingesters := make([]query, 0, 3)
	for _, inst := range instances(in) {
		if inst.IngesterMetrics != "" {
			ingesters = append(ingesters, query{
				Expr:   fmt.Sprintf("max by (partition) (%s%s%s)", inst.IngesterMetrics, ingesterDelay, sel()),
				Legend: inst.Name + " partition {{partition}}",
			})
		}
	}
	return []panel{
		{Title: "Components up", Type: panelStat, Unit: unitNone, Queries: []query{{
			Expr: "min by (armada_component) (up" + sel() + ")", Legend: "{{armada_component}}",
		}}},
		{Title: "Scheduler leader", Type: panelStat, Unit: unitNone, Queries: []query{{
			Expr: "max by (name) (" + metricLeaderStatus + sel() + ")", Legend: "{{name}}",
		}}},
		{Title: "Scheduling cycle time (95th percentile)", Type: panelTimeseries, Unit: "ms", Queries: []query{{
			Expr: fmt.Sprintf("histogram_quantile(0.95, sum by (le) (rate(%s_bucket%s[5m])))", metricCycleTimes, sel()), Legend: "p95",
		}}},
		{Title: "Scheduling cycles by outcome", Type: panelTimeseries, Unit: "ops", Queries: []query{{
			Expr: fmt.Sprintf("sum by (outcome) (rate(%s%s[5m]))", metricScheduleOutcome, sel()), Legend: "{{outcome}}",
		}}},
		{Title: "Queued jobs", Type: panelTimeseries, Unit: unitShort, Queries: []query{{
			Expr: fmt.Sprintf("sum by (queue) (max by (queue, state) (%s%s))", metricQueueSize, sel()), Legend: "{{queue}}",
		}}},
		{Title: "CPU capacity per cluster and pool", Type: panelTimeseries, Unit: unitShort, Queries: []query{
			{Expr: fmt.Sprintf("max by (cluster, pool) (%s%s)", metricClusterCapacity, sel(`resourceType="cpu"`)), Legend: "{{cluster}}/{{pool}} total"},
			{Expr: fmt.Sprintf("max by (cluster, pool) (%s%s)", metricClusterAvailable, sel(`resourceType="cpu"`)), Legend: "{{cluster}}/{{pool}} available"},
		}},
		{Title: "Ingester lag behind Pulsar", Type: panelTimeseries, Unit: "ms", Queries: ingesters},
	}
}

func queuePanels(in *Install) []panel {
	sel := in.promSelector
	return []panel{
		{Title: "Queued jobs by queue", Type: panelTimeseries, Unit: unitShort, Queries: []query{{
			Expr: fmt.Sprintf("max by (queue, state) (%s%s)", metricQueueSize, sel()), Legend: "{{queue}} {{state}}",
		}}},
		{Title: "Allocated CPU by queue", Type: panelTimeseries, Unit: unitShort, Queries: []query{{
			Expr:   fmt.Sprintf("sum by (queue, pool) (max by (queue, pool, priorityClass, priceBand) (armada_queue_resource_allocated%s))", sel(`resourceType="cpu"`)),
			Legend: "{{queue}}/{{pool}}",
		}}},
		{Title: "Queued CPU by queue", Type: panelTimeseries, Unit: unitShort, Queries: []query{{
			Expr:   fmt.Sprintf("sum by (queue, pool) (max by (queue, pool, priorityClass, priceBand) (armada_queue_resource_queued%s))", sel(`resourceType="cpu"`)),
			Legend: "{{queue}}/{{pool}}",
		}}},
		{Title: "Fair share and actual share", Type: panelTimeseries, Unit: "percentunit", Queries: []query{
			{Expr: "max by (queue, pool) (armada_scheduler_fair_share" + sel() + ")", Legend: "{{queue}}/{{pool}} fair"},
			{Expr: "max by (queue, pool) (armada_scheduler_actual_share" + sel() + ")", Legend: "{{queue}}/{{pool}} actual"},
		}},
		{Title: "Job state transitions by queue", Type: panelTimeseries, Unit: "ops", Queries: []query{{
			Expr:   "sum by (queue, state) (rate(armada_scheduler_job_state_counter_by_queue" + sel() + "[5m]))",
			Legend: "{{queue}} {{state}}",
		}}},
	}
}

// Grafana's dashboard JSON model, only the fields set here. Struct fields
// keep the JSON in a fixed order, so the same install gives the same bytes.
type (
	grafanaDashboard struct {
		UID           string            `json:"uid"`
		Title         string            `json:"title"`
		Tags          []string          `json:"tags"`
		SchemaVersion int               `json:"schemaVersion"`
		Editable      bool              `json:"editable"`
		Refresh       string            `json:"refresh"`
		Time          grafanaTime       `json:"time"`
		Templating    grafanaTemplating `json:"templating"`
		Panels        []grafanaPanel    `json:"panels"`
	}
	grafanaTime struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	grafanaTemplating struct {
		List []grafanaVariable `json:"list"`
	}
	grafanaVariable struct {
		Name  string `json:"name"`
		Label string `json:"label"`
		Type  string `json:"type"`
		Query string `json:"query"`
	}
	grafanaPanel struct {
		ID          int                `json:"id"`
		Title       string             `json:"title"`
		Type        string             `json:"type"`
		GridPos     grafanaGridPos     `json:"gridPos"`
		Datasource  grafanaDatasource  `json:"datasource"`
		FieldConfig grafanaFieldConfig `json:"fieldConfig"`
		Targets     []grafanaTarget    `json:"targets"`
	}
	grafanaGridPos struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	}
	grafanaDatasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	grafanaFieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	}
	grafanaTarget struct {
		RefID        string            `json:"refId"`
		Expr         string            `json:"expr"`
		LegendFormat string            `json:"legendFormat"`
		Datasource   grafanaDatasource `json:"datasource"`
	}
)

// dashboardJSON is a dashboard's Grafana JSON for an installation: two
// panels per row, each 12 columns wide.
func (in *Install) dashboardJSON(d dashboard) ([]byte, error) {
	ds := grafanaDatasource{Type: "prometheus", UID: "${datasource}"}
	g := grafanaDashboard{
		UID:           fmt.Sprintf("armada-%s-%s-%s", in.Namespace, in.Name, d.Name),
		Title:         fmt.Sprintf("%s (%s/%s)", d.Title, in.Namespace, in.Name),
		Tags:          []string{"armada"},
		SchemaVersion: 39,
		Refresh:       "30s",
		Time:          grafanaTime{From: "now-6h", To: "now"},
		Templating: grafanaTemplating{List: []grafanaVariable{
			{Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus"},
		}},
	}
	// Grafana UIDs are at most 40 characters.
	if len(g.UID) > 40 {
		g.UID = g.UID[:40]
	}
	for i, p := range d.Panels(in) {
		gp := grafanaPanel{
			ID: i + 1, Title: p.Title, Type: p.Type, Datasource: ds,
			GridPos: grafanaGridPos{H: 8, W: 12, X: (i % 2) * 12, Y: (i / 2) * 8},
		}
		gp.FieldConfig.Defaults.Unit = p.Unit
		for j, q := range p.Queries {
			gp.Targets = append(gp.Targets, grafanaTarget{RefID: string(rune('A' + j)), Expr: q.Expr, LegendFormat: q.Legend, Datasource: ds})
		}
		g.Panels = append(g.Panels, gp)
	}
	b, err := structenc.MarshalIndentJSON(g)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot encode the %s dashboard", d.Name)
	}
	return b, nil
}

// dashboardConfigMap holds one dashboard for Grafana's dashboard sidecar,
// which loads every ConfigMap labelled grafana_dashboard: "1".
func (in *Install) dashboardConfigMap(d dashboard) (*corev1.ConfigMap, error) {
	b, err := in.dashboardJSON(d)
	if err != nil {
		return nil, err
	}
	meta := in.meta(in.object("dashboard-"+d.Name), "monitoring")
	meta.Labels = in.monitoringLabels("monitoring")
	meta.Labels[labelGrafanaDashboard] = labelGrafanaDashboardLoaded
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{in.Name + "-" + d.Name + ".json": string(b)},
	}, nil
}
