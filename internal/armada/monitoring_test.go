package armada

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// monitored is a spec with monitoring on and two executors.
func monitored(mods ...func(*v1alpha1.ArmadaSpec)) v1alpha1.ArmadaSpec {
	return spec(append([]func(*v1alpha1.ArmadaSpec){func(s *v1alpha1.ArmadaSpec) {
		s.Monitoring.Enabled = true
		s.Monitoring.Labels = map[string]string{"release": "kube-prometheus-stack"}
		s.Scheduling.Pools = []v1alpha1.Pool{{Name: "cpu"}}
		s.Executors = []v1alpha1.Executor{{ClusterID: "a"}, {ClusterID: "b"}}
		s.Components.Scheduler.Replicas = ptrInt32(3)
	}}, mods...)...)
}

func ptrInt32(v int32) *int32 { return &v }

// kinds collects the rendered objects of one kind, by key.
func objectsOfKind(out *Output, kind string) map[string]Object {
	m := map[string]Object{}
	for _, o := range out.Objects {
		if o.Object.GetObjectKind().GroupVersionKind().Kind == kind {
			m[o.Key] = o
		}
	}
	return m
}

// selects evaluates a ServiceMonitor's label selector on a Service.
func selects(t *testing.T, sm *unstructured.Unstructured, svc *corev1.Service) bool {
	t.Helper()
	raw, _, _ := unstructured.NestedMap(sm.Object, "spec", "selector")
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(labels.Set(svc.Labels))
}

// TestServiceMonitorsSelectExactlyTheirComponent proves the scrape wiring
// the way prometheus-operator resolves it: each ServiceMonitor's selector
// matches exactly one composed Service (never the scheduler's headless
// one, which selects the same pods), that Service has the metrics port the
// monitor names, its selector picks exactly that instance's pods, and the
// container port behind it is the port the instance's generated config
// listens on (the table's metrics key).
func TestServiceMonitorsSelectExactlyTheirComponent(t *testing.T) {
	out := render(t, monitored(), Observed{Jobs: migrated(t, monitored())})
	monitors := objectsOfKind(out, "ServiceMonitor")
	services := objectsOfKind(out, "Service")
	in, _ := New(claimed(monitored()))
	insts := instances(in)
	if len(monitors) != len(insts) {
		t.Fatalf("%d ServiceMonitors for %d instances", len(monitors), len(insts))
	}
	for _, inst := range insts {
		sm := monitors[inst.Name+"-servicemonitor"].Object.(*unstructured.Unstructured)
		var matched []*corev1.Service
		for _, o := range services {
			if svc := o.Object.(*corev1.Service); selects(t, sm, svc) {
				matched = append(matched, svc)
			}
		}
		if len(matched) != 1 {
			t.Errorf("%s: ServiceMonitor selects %d Services, want exactly 1", inst.Name, len(matched))
			continue
		}
		svc := matched[0]
		if svc.Name != in.object(inst.Name) {
			t.Errorf("%s: ServiceMonitor selects Service %s", inst.Name, svc.Name)
		}
		port, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		name := port[0].(map[string]any)["port"]
		var svcPort *corev1.ServicePort
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Name == name {
				svcPort = &svc.Spec.Ports[i]
			}
		}
		if svcPort == nil {
			t.Errorf("%s: Service has no port %v", inst.Name, name)
			continue
		}
		tpl := podTemplateOf(t, out, inst.Name)
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(tpl.Labels)) {
			t.Errorf("%s: Service selector %v does not select the instance's pods %v", inst.Name, svc.Spec.Selector, tpl.Labels)
		}
		var containerPort int32
		for _, p := range tpl.Spec.Containers[0].Ports {
			if p.Name == svcPort.TargetPort.StrVal {
				containerPort = p.ContainerPort
			}
		}
		cfg := config(t, out, inst.Name+"-config")
		var v any = cfg
		for _, k := range inst.Metrics {
			v = v.(map[string]any)[k]
		}
		if fmt.Sprint(v) != fmt.Sprint(containerPort) || containerPort == 0 {
			t.Errorf("%s: config %s = %v, but the metrics container port is %d", inst.Name, strings.Join(inst.Metrics, "."), v, containerPort)
		}
		if got := sm.GetLabels()["release"]; got != "kube-prometheus-stack" {
			t.Errorf("%s: ServiceMonitor lacks spec.monitoring.labels: %v", inst.Name, sm.GetLabels())
		}
	}
}

// podTemplateOf is an instance's rendered pod template.
func podTemplateOf(t *testing.T, out *Output, name string) corev1.PodTemplateSpec {
	t.Helper()
	tpl, ok := podTemplates(out)[name+keyWorkloadSuffix]
	if !ok {
		t.Fatalf("%s: no workload", name)
	}
	return tpl
}

// TestMonitoringSwitches proves monitoring is off by default, composes
// what its switches ask for, and reports it in status; and that the
// ingesters' delay monitor is on exactly when lag can be measured.
func TestMonitoringSwitches(t *testing.T) {
	off := false
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		kinds  map[string]int
		status v1alpha1.MonitoringStatus
		// delayMonit: the ingesters measure their Pulsar delay.
		delayMonit bool
	}{
		"OffByDefault": {
			reason: "Nothing is composed for monitoring unless asked, but the metrics ports are still set.",
			spec:   spec(),
			kinds:  map[string]int{"ServiceMonitor": 0, "PrometheusRule": 0, "ConfigMap": 0},
			status: v1alpha1.MonitoringStatus{},
		},
		"AllOn": {
			reason: "Enabled composes a monitor per instance, the rule and two dashboards, and lag is measured.",
			spec:   monitored(),
			kinds:  map[string]int{"ServiceMonitor": 9, "PrometheusRule": 1, "ConfigMap": 2},
			status: v1alpha1.MonitoringStatus{
				Composed: true, PrometheusRule: "armada-alerts",
				Labels: map[string]string{
					"release": "kube-prometheus-stack", labelName: "armada", labelInstance: "armada",
					labelPartOf: "armada", labelManagedBy: "function-armada",
				},
				ServiceMonitors: []string{
					"armada-server", "armada-scheduler", "armada-scheduler-ingester", "armada-lookout", "armada-lookout-ingester",
					"armada-event-ingester", "armada-binoculars", "armada-executor-a", "armada-executor-b",
				},
				Dashboards: []string{"armada-dashboard-overview", "armada-dashboard-queues"},
			},
			delayMonit: true,
		},
		"OnlyRules": {
			reason: "Switches turn parts off; the ingesters still measure their lag for the rule.",
			spec: monitored(func(s *v1alpha1.ArmadaSpec) {
				s.Monitoring.ServiceMonitors = &off
				s.Monitoring.Dashboards.Enabled = &off
			}),
			delayMonit: true,
			kinds:      map[string]int{"ServiceMonitor": 0, "PrometheusRule": 1, "ConfigMap": 0},
			status: v1alpha1.MonitoringStatus{
				Composed: true, PrometheusRule: "armada-alerts",
				Labels: map[string]string{
					"release": "kube-prometheus-stack", labelName: "armada", labelInstance: "armada",
					labelPartOf: "armada", labelManagedBy: "function-armada",
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, tc.spec, Observed{Jobs: migrated(t, tc.spec)})
			for kind, n := range tc.kinds {
				if got := len(objectsOfKind(out, kind)); got != n {
					t.Errorf("%s\n%d %s objects, want %d", tc.reason, got, kind, n)
				}
			}
			if diff := cmp.Diff(tc.status, out.Status.Monitoring); diff != "" {
				t.Errorf("%s\nstatus.monitoring (-want +got):\n%s", tc.reason, diff)
			}
			for _, ing := range []string{"scheduler-ingester", "lookout-ingester", "event-ingester"} {
				p := config(t, out, ing+"-config")["pulsar"].(map[string]any)
				dm, ok := p["delayMonitor"].(map[string]any)
				on := ok && dm["enabled"] == true && p["restURL"] == "http://pulsar:8080"
				if on != tc.delayMonit {
					t.Errorf("%s\n%s: delay monitor on = %t, want %t (pulsar block %v)", tc.reason, ing, on, tc.delayMonit, p)
				}
			}
			for _, o := range objectsOfKind(out, "ConfigMap") {
				if o.Object.GetLabels()[labelGrafanaDashboard] != "1" {
					t.Errorf("%s\ndashboard %s lacks the grafana_dashboard label", tc.reason, o.Object.GetName())
				}
			}
		})
	}
}
