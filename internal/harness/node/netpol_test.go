package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
)

// The enforcement check places, on the real node, a stand-in pod for
// every pod the production example composes (the probe image, carrying
// the labels the composed policies select), one for "any address" (an
// external service) and one for cluster DNS in kube-system, applies the
// composed NetworkPolicies as rendered, and dials from pods labelled as
// each source. Every row of the flow table in
// docs/guides/network-policies.md must connect, and pairs it does not list
// must not.

const (
	// flowsDoc holds the flow table; flowsBegin and flowsEnd delimit it.
	flowsDoc   = "../../../docs/guides/network-policies.md"
	flowsBegin = "<!-- flows: examples/production.yaml -->"
	flowsEnd   = "<!-- /flows -->"
	// flowsRender is that example's render golden file.
	flowsRender = "../../../test/render/testdata/production.yaml"

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
	componentPorts = []string{"tcp:50051", "tcp:50052", "tcp:8080", "tcp:8081", "tcp:9000"}
	externalPorts  = []string{"tcp:443", "tcp:5432", "tcp:6379", "tcp:6443", "tcp:6650", "tcp:8080"}
	dnsPorts       = []string{"tcp:53", "udp:53"}
)

// A flowRow is one row of the flow table: From reaches To on Ports.
type flowRow struct {
	From, To, Why string
	// Ports are "tcp:53", "udp:53", ...
	Ports []string
}

// flowTable reads the flow table from the guide.
func flowTable(t *testing.T) []flowRow {
	t.Helper()
	b, err := os.ReadFile(flowsDoc)
	if err != nil {
		t.Fatal(err)
	}
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
		t.Fatalf("%s: the flow table has %d rows, fewer than the production example's", flowsDoc, len(rows))
	}
	return rows
}

// A source is a client pod: where it runs and the labels it carries.
type source struct {
	NS     string
	Labels map[string]string
}

// netpolWorld is the stand-ins' placement: the composed pods by the
// policy suffix they are named by ("server", "migrate-lookout"), the
// external service and DNS.
type netpolWorld struct {
	ns       string
	policies []*networkingv1.NetworkPolicy
	labels   map[string]map[string]string
	ips      map[string]string
}

// loadWorld reads the composed NetworkPolicies of the render and the pods
// they name.
func loadWorld(t *testing.T) *netpolWorld {
	t.Helper()
	r, err := conformance.LoadRender(flowsRender)
	if err != nil {
		t.Fatal(err)
	}
	w := &netpolWorld{labels: map[string]map[string]string{}, ips: map[string]string{}}
	for _, u := range r.Objects {
		if u.GetKind() != "NetworkPolicy" {
			continue
		}
		p := &networkingv1.NetworkPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			t.Fatal(err)
		}
		w.ns = p.Namespace
		w.policies = append(w.policies, p)
		if pod, ok := strings.CutPrefix(p.Name, "armada-netpol-"); ok && pod != "default-deny" {
			w.labels[pod] = p.Spec.PodSelector.MatchLabels
		}
	}
	if len(w.labels) == 0 {
		t.Fatalf("%s composes no per-pod NetworkPolicy", flowsRender)
	}
	return w
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
	t.Fatalf("the flow table's source %q is no composed pod of %s", from, flowsRender)
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
	case w.ips[to] != "":
		return w.ips[to]
	}
	t.Fatalf("the flow table's destination %q is no composed pod of %s", to, flowsRender)
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

// runClients starts one dialling pod per source at once, waits for all
// and returns what each reported, by target.
func runClients(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node, prefix string, sources map[string]source, dials map[string][]dial) map[string]map[string]string {
	t.Helper()
	for name, src := range sources {
		args := []string{"dial", "-for", dialFor.String()}
		for _, d := range dials[name] {
			args = append(args, d.Target)
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

// mismatches lists every dial whose outcome is not the one wanted.
func mismatches(dials map[string][]dial, got map[string]map[string]string) []string {
	var out []string
	for name, ds := range dials {
		for _, d := range ds {
			res, ok := got[name][d.Target]
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

// checkComposedNetworkPolicies is TestRealNode's enforcement check.
func checkComposedNetworkPolicies(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node) {
	t.Helper()
	w := loadWorld(t)
	rows := flowTable(t)
	for _, ns := range []string{w.ns, outsideNS} {
		mustCreate(t, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
			}}}, metav1.CreateOptions{})
			return err
		})
	}
	type standIn struct {
		ns     string
		labels map[string]string
		ports  []string
	}
	standIns := map[string]standIn{
		"external": {outsideNS, nil, externalPorts},
		"dns":      {metav1.NamespaceSystem, map[string]string{"k8s-app": "kube-dns"}, dnsPorts},
	}
	for pod, labels := range w.labels {
		standIns[pod] = standIn{w.ns, labels, componentPorts}
	}
	for name, s := range standIns {
		p := probePod(name, n.Name(), s.labels, append([]string{"serve"}, s.ports...)...)
		mustCreate(t, func() error { _, err := cs.CoreV1().Pods(s.ns).Create(ctx, p, metav1.CreateOptions{}); return err })
	}
	for name, s := range standIns {
		p := waitPod(ctx, t, cs, s.ns, name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
		w.ips[name] = p.Status.PodIP
	}
	for _, p := range w.policies {
		mustCreate(t, func() error {
			_, err := cs.NetworkingV1().NetworkPolicies(w.ns).Create(ctx, p, metav1.CreateOptions{})
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
		}
	}
	// Pairs the table does not list are refused.
	refuse := func(name string, src source, to, port, why string) {
		sources[name] = src
		proto, p, _ := strings.Cut(port, ":")
		target := proto + ":" + w.ips[to] + ":" + p
		if seen[name+" "+target] {
			t.Fatalf("%s to %s is both a row of the table and a pair to refuse", name, target)
		}
		dials[name] = append(dials[name], dial{Target: target, Why: why, Want: false})
	}
	users := source{NS: outsideNS}
	refuse("stranger", source{NS: w.ns}, "scheduler", "tcp:50051", "a pod without Armada's labels to the scheduler's gRPC port")
	refuse("users", users, "scheduler", "tcp:50051", "the scheduler's gRPC port, not exposed in this example")
	refuse("impostor", source{NS: outsideNS, Labels: w.labels["server"]}, "scheduler", "tcp:50051", "another namespace's pod with the server's labels")
	refuse("users", users, "binoculars", "tcp:50052", "binoculars' plain gRPC port behind its TLS sidecar")
	refuse("users", users, "binoculars", "tcp:8081", "binoculars' plain HTTP port behind its TLS sidecar")
	refuse("users", users, "lookout", "tcp:8081", "Lookout's plain port behind its TLS sidecar")
	refuse("users", users, "server", "tcp:9000", "metrics, only for Prometheus")
	refuse("server", source{NS: w.ns, Labels: w.labels["server"]}, "binoculars", "tcp:50052", "binoculars' plain gRPC port, not even from the server")
	refuse("lookout", source{NS: w.ns, Labels: w.labels["lookout"]}, "external", "tcp:6379", "Redis, which Lookout does not use")
	refuse("executor-local", source{NS: w.ns, Labels: w.labels["executor-local"]}, "external", "tcp:5432", "PostgreSQL, which the executor does not use")
	refuse("pulsar-topics", source{NS: w.ns, Labels: w.labels["pulsar-topics"]}, "external", "tcp:6650", "Pulsar's binary port: the topic Job uses the admin API")
	refuse("lookout-ingester", source{NS: w.ns, Labels: w.labels["lookout-ingester"]}, "scheduler", "tcp:50051", "the scheduler, which the ingester does not call")

	t.Logf("dialling %d targets from %d sources (each refusal takes %s)", countDials(dials), len(sources), dialFor)
	if bad := mismatches(dials, runClients(ctx, t, cs, n, "from-", sources, dials)); len(bad) > 0 {
		t.Fatalf("with the composed NetworkPolicies enforced, %d of %d connections were not as the table says:\n%s",
			len(bad), countDials(dials), strings.Join(bad, "\n"))
	}

	// Without the scheduler's own policy, only the default deny selects it:
	// the server no longer reaches it, while it still resolves names.
	if err := cs.NetworkingV1().NetworkPolicies(w.ns).Delete(ctx, "armada-netpol-scheduler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := map[string]source{"server": {NS: w.ns, Labels: w.labels["server"]}}
	after := map[string][]dial{"server": {
		{Target: "tcp:" + w.ips["scheduler"] + ":50051", Why: "the scheduler with armada-netpol-scheduler deleted", Want: false},
		{Target: "udp:" + w.ips["dns"] + ":53", Why: "DNS, still allowed", Want: true},
	}}
	if bad := mismatches(after, runClients(ctx, t, cs, n, "deleted-", srv, after)); len(bad) > 0 {
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
