package node

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
)

// The enforcement check places, on the real node, a stand-in pod for
// every pod an example composes (the probe image, carrying the labels the
// composed policies select) and for the in-cluster backing services' pods
// (CloudNativePG's, Pulsar's brokers), one for "any address" (an external
// service) and one for cluster DNS in kube-system, applies the composed
// NetworkPolicies as rendered, and dials from pods labelled as each
// source. Every row of the example's flow table in
// docs/guides/network-policies.md must connect, and pairs it does not list
// must not.

const (
	// flowsDoc holds the flow tables, each between "<!-- flows:
	// examples/EXAMPLE -->" and flowsEnd.
	flowsDoc = "../../../docs/guides/network-policies.md"
	flowsEnd = "<!-- /flows -->"

	outsideNS = "outside"
	// dialFor is how long a client keeps trying each target: long enough
	// for kube-router to program a new pod, and what every refused target
	// costs.
	dialFor = 20 * time.Second
)

// Ports the stand-ins serve. Every component serves every port any row
// or refused pair dials it on, so a refusal is the policy's, not a closed
// port's.
var (
	componentPorts = []string{"tcp:50051", "tcp:50052", "tcp:6379", "tcp:8080", "tcp:8081", "tcp:9000"}
	externalPorts  = []string{"tcp:443", "tcp:5432", "tcp:6379", "tcp:6443", "tcp:6650", "tcp:8080"}
	dnsPorts       = []string{"tcp:53", "udp:53"}
	// backingPorts are what the in-cluster backing services' stand-ins
	// serve, by the policy suffix that selects them.
	backingPorts = map[string][]string{
		"postgres":      {"tcp:5432", "tcp:8000"},
		"pulsar-broker": {"tcp:6650", "tcp:8080"},
	}
)

// A flowRow is one row of the flow table: From reaches To on Ports.
type flowRow struct {
	From, To, Why string
	// Ports are "tcp:53", "udp:53", ...
	Ports []string
}

// flowTable reads an example's flow table from the guide.
func flowTable(t *testing.T, example string) []flowRow {
	t.Helper()
	b, err := os.ReadFile(flowsDoc)
	if err != nil {
		t.Fatal(err)
	}
	flowsBegin := "<!-- flows: examples/" + example + " -->"
	_, rest, ok := strings.Cut(string(b), flowsBegin)
	table, _, ok2 := strings.Cut(rest, flowsEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no table between %q and %q", flowsDoc, flowsBegin, flowsEnd)
	}
	var rows []flowRow
	for line := range strings.SplitSeq(strings.TrimSpace(table), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || cells[0] == "From" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		r := flowRow{From: cells[0], To: cells[1], Why: cells[3]}
		for p := range strings.SplitSeq(cells[2], ", ") {
			proto, port, ok := strings.Cut(p, " ")
			if !ok {
				t.Fatalf("cannot parse the ports %q of row %q", cells[2], line)
			}
			r.Ports = append(r.Ports, strings.ToLower(proto)+":"+port)
		}
		rows = append(rows, r)
	}
	if len(rows) < 20 {
		t.Fatalf("%s: the flow table of %s has %d rows, fewer than any example's", flowsDoc, example, len(rows))
	}
	return rows
}

// A source is a client pod: where it runs and the labels it carries.
type source struct {
	NS     string
	Labels map[string]string
}

// netpolWorld is the stand-ins' placement: the composed pods by the
// policy suffix they are named by ("server", "migrate-lookout",
// "postgres", "pulsar-broker"), the external service and DNS.
type netpolWorld struct {
	example, ns string
	policies    []*networkingv1.NetworkPolicy
	labels      map[string]map[string]string
	ips         map[string]string
	// services are the composed Services; ports the container ports of
	// the composed Deployments' and StatefulSets' pods, by their component
	// label.
	services []*corev1.Service
	ports    map[string][]corev1.ContainerPort
}

// loadWorld reads the composed NetworkPolicies of the example's render
// golden file and the pods they name.
func loadWorld(t *testing.T, example string) *netpolWorld {
	t.Helper()
	r, err := conformance.LoadRender(filepath.Join("..", "..", "..", "test", "render", "testdata", example))
	if err != nil {
		t.Fatal(err)
	}
	w := &netpolWorld{example: example, labels: map[string]map[string]string{}, ips: map[string]string{}}
	w.ports = map[string][]corev1.ContainerPort{}
	for _, u := range r.Objects {
		switch u.GetKind() {
		case "Service":
			svc := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
				t.Fatal(err)
			}
			w.services = append(w.services, svc)
			continue
		case "Deployment", "StatefulSet":
			tpl, _, err := unstructured.NestedMap(u.Object, "spec", "template")
			pod := &corev1.PodTemplateSpec{}
			if err == nil {
				err = runtime.DefaultUnstructuredConverter.FromUnstructured(tpl, pod)
			}
			if err != nil {
				t.Fatal(err)
			}
			c := pod.Labels[labelComponent]
			for _, ctr := range pod.Spec.Containers {
				w.ports[c] = append(w.ports[c], ctr.Ports...)
			}
			continue
		case "NetworkPolicy":
		default:
			continue
		}
		p := &networkingv1.NetworkPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			t.Fatal(err)
		}
		w.ns = p.Namespace
		w.policies = append(w.policies, p)
		// default-deny and pulsar (all of Pulsar's pods) select no pod of
		// their own.
		if pod, ok := strings.CutPrefix(p.Name, "armada-netpol-"); ok && pod != "default-deny" && pod != "pulsar" {
			w.labels[pod] = p.Spec.PodSelector.MatchLabels
		}
	}
	if len(w.labels) == 0 {
		t.Fatalf("%s composes no per-pod NetworkPolicy", example)
	}
	return w
}

// labelComponent is the label that names a composed pod's component.
const labelComponent = "app.kubernetes.io/component"

// serviceFor is the name of the composed Service (not headless) that
// selects pod and has port, "" if there is none.
func (w *netpolWorld) serviceFor(pod, port string) string {
	for _, svc := range w.services {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone || !maps.Equal(svc.Spec.Selector, w.labels[pod]) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if fmt.Sprint(p.Port) == port && p.Protocol != corev1.ProtocolUDP {
				return svc.Name + "." + w.ns + ".svc." + ClusterDomain
			}
		}
	}
	return ""
}

// source is who a row's From names.
func (w *netpolWorld) source(t *testing.T, from string) (string, source) {
	t.Helper()
	switch {
	case strings.HasPrefix(from, "users"):
		return "users", source{NS: outsideNS}
	case strings.HasPrefix(from, "Prometheus"):
		return "prometheus", source{NS: outsideNS, Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	case w.labels[from] != nil:
		return from, source{NS: w.ns, Labels: w.labels[from]}
	}
	t.Fatalf("the flow table's source %q is no composed pod of %s", from, w.example)
	return "", source{}
}

// target is the address a row's To names.
func (w *netpolWorld) target(t *testing.T, to string) string {
	t.Helper()
	switch {
	case strings.HasPrefix(to, "DNS"):
		return w.ips["dns"]
	case strings.HasPrefix(to, "any address"):
		return w.ips["external"]
	case strings.HasPrefix(to, "PostgreSQL pods"):
		return w.ips["postgres"]
	case strings.HasPrefix(to, "Pulsar brokers"):
		return w.ips["pulsar-broker"]
	case w.ips[to] != "":
		return w.ips[to]
	}
	t.Fatalf("the flow table's destination %q is no composed pod of %s", to, w.example)
	return ""
}

// probePod runs the probe image with args on node, restricted.
func probePod(name, node string, labels map[string]string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: func() *corev1.PodSecurityContext {
				s := armada.RestrictedPodSecurity(1000, 2000, nil)
				// DNS on 53 and the external service on 443 as uid 1000: a
				// safe sysctl, allowed under restricted.
				s.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}
				return s
			}(),
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           ProbeImage,
				Args:            args,
				SecurityContext: armada.RestrictedContainerSecurity(),
			}},
		},
	}
}

// A dial is one target a client tries, and whether it must connect.
type dial struct {
	Target, Why string
	Want        bool
}

// arg is the probe's argument for d: refusals are held for the whole
// window and judged by its end.
func (d dial) arg() string {
	if d.Want {
		return d.Target
	}
	return "deny:" + d.Target
}

// runClients starts one dialling pod per source at once, waits for all
// and returns what each reported, by target.
func runClients(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node, prefix string, sources map[string]source, dials map[string][]dial) map[string]map[string]string {
	t.Helper()
	for name, src := range sources {
		args := []string{"dial", "-for", dialFor.String()}
		for _, d := range dials[name] {
			args = append(args, d.arg())
		}
		p := probePod(prefix+name, n.Name(), src.Labels, args...)
		mustCreate(t, func() error { _, err := cs.CoreV1().Pods(src.NS).Create(ctx, p, metav1.CreateOptions{}); return err })
	}
	got := map[string]map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, src := range sources {
		wg.Go(func() {
			waitPod(ctx, t, cs, src.NS, prefix+name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
			res := map[string]string{}
			for line := range strings.SplitSeq(strings.TrimSpace(n.PodLogs(src.NS, prefix+name, "probe")), "\n") {
				// A CRI log line: "TIME stdout F TARGET ok".
				f := strings.SplitN(line, " ", 5)
				if len(f) == 5 {
					res[f[3]] = f[4]
				}
			}
			mu.Lock()
			got[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// mismatches lists every dial whose outcome is not the one wanted, and
// logs refusals that connected early (before kube-router had programmed
// the new pod).
func mismatches(t *testing.T, dials map[string][]dial, got map[string]map[string]string) []string {
	t.Helper()
	var out []string
	for name, ds := range dials {
		for _, d := range ds {
			res, ok := got[name][d.arg()]
			if strings.HasSuffix(res, "times before)") {
				t.Logf("%s to %s (%s): %s", name, d.Target, d.Why, res)
			}
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s to %s (%s): the client reported nothing", name, d.Target, d.Why))
			case d.Want && res != "ok":
				out = append(out, fmt.Sprintf("%s to %s (%s): want a connection, got %s", name, d.Target, d.Why, res))
			case !d.Want && res == "ok":
				out = append(out, fmt.Sprintf("%s to %s (%s): want it refused, it connected", name, d.Target, d.Why))
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkComposedNetworkPolicies is TestRealNode's enforcement check: the
// external service and DNS stand-ins, then each example in turn.
func checkComposedNetworkPolicies(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node) {
	t.Helper()
	createNamespace(ctx, t, cs, outsideNS)
	shared := map[string]standIn{
		"external": {outsideNS, nil, externalPorts, nil},
		// Not labelled as kube-dns: the kube-dns Service must reach only
		// the node's CoreDNS.
		"dns": {metav1.NamespaceSystem, map[string]string{"app": "dns-stand-in"}, dnsPorts, nil},
	}
	ips := startStandIns(ctx, t, cs, n, shared)
	for _, example := range []string{"production.yaml", "all-in-cluster.yaml"} {
		t.Run(strings.TrimSuffix(example, ".yaml"), func(t *testing.T) {
			w := loadWorld(t, example)
			maps.Copy(w.ips, ips)
			checkExample(ctx, t, cs, n, w)
		})
	}
}

// A standIn is a serving probe pod: its namespace, labels and ports.
type standIn struct {
	ns     string
	labels map[string]string
	ports  []string
	// declared are container ports the pod declares, which the composed
	// Services name as targets.
	declared []corev1.ContainerPort
}

// startStandIns starts the stand-ins and returns their addresses.
func startStandIns(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node, standIns map[string]standIn) map[string]string {
	t.Helper()
	for name, s := range standIns {
		p := probePod(name, n.Name(), s.labels, append([]string{"serve"}, s.ports...)...)
		p.Spec.Containers[0].Ports = s.declared
		mustCreate(t, func() error { _, err := cs.CoreV1().Pods(s.ns).Create(ctx, p, metav1.CreateOptions{}); return err })
	}
	ips := map[string]string{}
	for name, s := range standIns {
		p := waitPod(ctx, t, cs, s.ns, name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
		ips[name] = p.Status.PodIP
	}
	return ips
}

func createNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
		}}}, metav1.CreateOptions{})
		return err
	})
}

// checkExample enforces one example's policies: every row of its table
// connects, the pairs refusals lists do not, and deleting the scheduler's
// policy cuts the server off from it.
func checkExample(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node, w *netpolWorld) {
	t.Helper()
	rows := flowTable(t, w.example)
	createNamespace(ctx, t, cs, w.ns)
	standIns := map[string]standIn{}
	for pod, labels := range w.labels {
		ports := componentPorts
		if p, ok := backingPorts[pod]; ok {
			ports = p
		}
		standIns[pod] = standIn{w.ns, labels, ports, w.ports[labels[labelComponent]]}
	}
	maps.Copy(w.ips, startStandIns(ctx, t, cs, n, standIns))
	for _, p := range w.policies {
		mustCreate(t, func() error {
			_, err := cs.NetworkingV1().NetworkPolicies(w.ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	for _, svc := range w.services {
		svc := svc.DeepCopy()
		svc.OwnerReferences = nil
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		mustCreate(t, func() error {
			_, err := cs.CoreV1().Services(w.ns).Create(ctx, svc, metav1.CreateOptions{})
			return err
		})
	}

	// Every row connects.
	sources := map[string]source{}
	dials := map[string][]dial{}
	seen := map[string]bool{}
	for _, r := range rows {
		name, src := w.source(t, r.From)
		sources[name] = src
		for _, port := range r.Ports {
			proto, p, _ := strings.Cut(port, ":")
			target := proto + ":" + w.target(t, r.To) + ":" + p
			if !seen[name+" "+target] {
				seen[name+" "+target] = true
				dials[name] = append(dials[name], dial{Target: target, Why: r.From + " to " + r.To + ": " + r.Why, Want: true})
			}
			// And by the Service's name: CoreDNS answers it under the
			// source's DNS rule, kube-proxy translates it, and the policy
			// is enforced on the translated address.
			if host := w.serviceFor(r.To, p); proto == "tcp" && host != "" && !seen[name+" "+host+p] {
				seen[name+" "+host+p] = true
				dials[name] = append(dials[name], dial{Target: "tcp:" + host + ":" + p, Why: r.From + " to " + r.To + " by its Service: " + r.Why, Want: true})
			}
		}
	}
	// Pairs the table does not list are refused; and, in-cluster,
	// CloudNativePG's operator reaches PostgreSQL's pods.
	expect := func(name string, src source, to, port, why string, want bool) {
		if w.ips[to] == "" {
			t.Fatalf("%s composes no %s to dial", w.example, to)
		}
		sources[name] = src
		proto, p, _ := strings.Cut(port, ":")
		target := proto + ":" + w.ips[to] + ":" + p
		if seen[name+" "+target] {
			t.Fatalf("%s to %s is both a row of the table and a pair to check", name, target)
		}
		seen[name+" "+target] = true
		dials[name] = append(dials[name], dial{Target: target, Why: why, Want: want})
		if host := w.serviceFor(to, p); proto == "tcp" && host != "" {
			dials[name] = append(dials[name], dial{Target: "tcp:" + host + ":" + p, Why: why + ", by its Service", Want: want})
		}
	}
	refuse := func(name string, src source, to, port, why string) { expect(name, src, to, port, why, false) }
	users := source{NS: outsideNS}
	as := func(pod string) source { return source{NS: w.ns, Labels: w.labels[pod]} }
	refuse("stranger", source{NS: w.ns}, "scheduler", "tcp:50051", "a pod without Armada's labels to the scheduler's gRPC port")
	refuse("users", users, "scheduler", "tcp:50051", "the scheduler's gRPC port, not exposed in this example")
	refuse("impostor", source{NS: outsideNS, Labels: w.labels["server"]}, "scheduler", "tcp:50051", "another namespace's pod with the server's labels")
	refuse("users", users, "binoculars", "tcp:50052", "binoculars' plain gRPC port behind its TLS sidecar")
	refuse("users", users, "binoculars", "tcp:8081", "binoculars' plain HTTP port behind its TLS sidecar")
	refuse("users", users, "lookout", "tcp:8081", "Lookout's plain port behind its TLS sidecar")
	refuse("users", users, "server", "tcp:9000", "metrics, only for Prometheus")
	refuse("server", as("server"), "binoculars", "tcp:50052", "binoculars' plain gRPC port, not even from the server")
	refuse("lookout", as("lookout"), "external", "tcp:6379", "Redis, which Lookout does not use")
	refuse("executor-local", as("executor-local"), "external", "tcp:5432", "PostgreSQL, which the executor does not use")
	refuse("pulsar-topics", as("pulsar-topics"), "external", "tcp:6650", "Pulsar's binary port: the topic Job uses the admin API")
	refuse("lookout-ingester", as("lookout-ingester"), "scheduler", "tcp:50051", "the scheduler, which the ingester does not call")
	if w.labels["postgres"] != nil {
		operator := map[string]string{"app.kubernetes.io/name": "cloudnative-pg"}
		createNamespace(ctx, t, cs, "cnpg-system")
		expect("cnpg-operator", source{NS: "cnpg-system", Labels: operator}, "postgres", "tcp:8000", "CloudNativePG's operator to the instance manager", true)
		expect("cnpg-operator", source{NS: "cnpg-system", Labels: operator}, "postgres", "tcp:5432", "CloudNativePG's operator to PostgreSQL", true)
		refuse("users", users, "postgres", "tcp:5432", "another namespace to PostgreSQL's port")
		refuse("fake-operator", source{NS: outsideNS, Labels: operator}, "postgres", "tcp:8000", "the operator's labels in another namespace")
		refuse("stranger", source{NS: w.ns}, "postgres", "tcp:5432", "a pod without Armada's labels to PostgreSQL")
		refuse("executor-local", as("executor-local"), "postgres", "tcp:5432", "the executor, which uses no database")
		refuse("users", users, "pulsar-broker", "tcp:6650", "another namespace to Pulsar")
		refuse("users", users, "redis", "tcp:6379", "another namespace to Redis")
		refuse("lookout", as("lookout"), "pulsar-broker", "tcp:6650", "Pulsar, which Lookout does not use")
	}

	prefix := strings.TrimSuffix(w.example, ".yaml") + "-"
	t.Logf("dialling %d targets from %d sources (each refusal takes %s)", countDials(dials), len(sources), dialFor)
	if bad := mismatches(t, dials, runClients(ctx, t, cs, n, prefix, sources, dials)); len(bad) > 0 {
		t.Fatalf("with the composed NetworkPolicies of %s enforced, %d of %d connections were not as the table says:\n%s",
			w.example, len(bad), countDials(dials), strings.Join(bad, "\n"))
	}

	// Without the scheduler's own policy, only the default deny selects it:
	// the server no longer reaches it, while it still resolves names.
	if err := cs.NetworkingV1().NetworkPolicies(w.ns).Delete(ctx, "armada-netpol-scheduler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := map[string]source{"server": as("server")}
	after := map[string][]dial{"server": {
		{Target: "tcp:" + w.ips["scheduler"] + ":50051", Why: "the scheduler with armada-netpol-scheduler deleted", Want: false},
		{Target: "udp:" + w.ips["dns"] + ":53", Why: "DNS, still allowed", Want: true},
	}}
	if bad := mismatches(t, after, runClients(ctx, t, cs, n, prefix+"deleted-", srv, after)); len(bad) > 0 {
		t.Fatalf("after deleting armada-netpol-scheduler:\n%s", strings.Join(bad, "\n"))
	}
}

func countDials(dials map[string][]dial) int {
	n := 0
	for _, ds := range dials {
		n += len(ds)
	}
	return n
}
