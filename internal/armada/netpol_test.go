package armada

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// converged renders a spec until everything it composes is there: each
// render observes every object of the last one ready and every Job
// complete.
func converged(t *testing.T, s v1alpha1.ArmadaSpec) (*Install, *Output) {
	t.Helper()
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	obs := Observed{}
	var out *Output
	for n := -1; out == nil || len(out.Objects) != n; {
		if out != nil {
			n = len(out.Objects)
		}
		out = render(t, s, obs)
		obs = Observed{Keys: map[string]bool{}, Ready: map[string]bool{}, Jobs: map[string]JobState{}}
		for _, o := range out.Objects {
			obs.Keys[o.Key], obs.Ready[o.Key] = true, true
			if j, ok := o.Object.(*batchv1.Job); ok {
				obs.Jobs[j.Name] = JobComplete
			}
		}
	}
	return in, out
}

// Kinds of endpoints in the network the tests build around an install.
const (
	kindArmada     = "armada"
	kindPostgres   = "postgres-pod"
	kindPulsar     = "pulsar-broker"
	kindZooKeeper  = "pulsar-zookeeper"
	kindBookie     = "pulsar-bookie"
	kindDNS        = "dns"
	kindAPIServer  = "kube-apiserver"
	kindExternal   = "external"
	kindPrometheus = "prometheus"
	kindIngressCtl = "ingress-controller"
	kindProvider   = "provider-armada"
	kindStranger   = "stranger"
	kindCNPG       = "cnpg-operator"
)

// netWorld is an install's composed pods and every other endpoint around
// them: in-cluster backing services' pods as CloudNativePG and the Pulsar
// chart label them, DNS, the API server and external services' addresses,
// Prometheus, an ingress controller, provider-armada, and unrelated pods
// in Armada's namespace and another.
type netWorld struct {
	in        *Install
	out       *Output
	model     *netModel
	endpoints []netEndpoint
	kind      map[string]string
	// services are the rendered Services by name.
	services map[string]*corev1.Service
	// templates are the Armada pods' templates by pod name.
	templates map[string]corev1.PodTemplateSpec
	// last is the last address given.
	last byte
}

// port32 is a port number, or 0.
func port32(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func (w *netWorld) add(kind string, e netEndpoint) {
	w.last++
	e.IP = netip.AddrFrom4([4]byte{10, 244, 0, w.last})
	if e.Namespace == "" {
		e.IP = netip.AddrFrom4([4]byte{203, 0, 113, w.last})
	}
	w.endpoints = append(w.endpoints, e)
	w.kind[e.String()] = kind
}

func (w *netWorld) find(kind, name string) netEndpoint {
	for _, e := range w.endpoints {
		if w.kind[e.String()] == kind && (name == "" || e.Name == name) {
			return e
		}
	}
	return netEndpoint{}
}

// newWorld builds the network of a converged render.
func newWorld(t *testing.T, in *Install, out *Output) *netWorld {
	t.Helper()
	ns := in.Namespace
	w := &netWorld{in: in, out: out, kind: map[string]string{}, services: map[string]*corev1.Service{}, templates: map[string]corev1.PodTemplateSpec{}}
	w.model = &netModel{Namespaces: map[string]map[string]string{}}
	for _, n := range []string{ns, "kube-system", "monitoring", "ingress-nginx", "crossplane-system", "cnpg-system", "other"} {
		w.model.Namespaces[n] = map[string]string{"kubernetes.io/metadata.name": n}
	}
	for _, o := range out.Objects {
		var tpl *corev1.PodTemplateSpec
		switch obj := o.Object.(type) {
		case *appsv1.Deployment:
			tpl = &obj.Spec.Template
		case *appsv1.StatefulSet:
			tpl = &obj.Spec.Template
		case *batchv1.Job:
			tpl = &obj.Spec.Template
		case *corev1.Service:
			w.services[obj.Name] = obj
		case *networkingv1.NetworkPolicy:
			w.model.Policies = append(w.model.Policies, obj)
		case *unstructured.Unstructured:
			w.backingPods(t, o.Key, obj)
		}
		if tpl == nil {
			continue
		}
		named := map[string]int32{}
		for _, c := range tpl.Spec.Containers {
			for _, p := range c.Ports {
				named[p.Name] = p.ContainerPort
			}
		}
		name := tpl.Labels[labelComponent]
		w.templates[name] = *tpl
		w.add(kindArmada, netEndpoint{Name: name, Namespace: ns, Labels: tpl.Labels, NamedPorts: named})
	}
	w.add(kindDNS, netEndpoint{Name: "coredns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}})
	w.add(kindAPIServer, netEndpoint{Name: "kube-apiserver"})
	w.add(kindExternal, netEndpoint{Name: "external-service"})
	w.add(kindPrometheus, netEndpoint{Name: "prometheus", Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"}})
	w.add(kindIngressCtl, netEndpoint{Name: "ingress-nginx", Namespace: "ingress-nginx", Labels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"}})
	w.add(kindProvider, netEndpoint{Name: "provider-armada", Namespace: "crossplane-system", Labels: map[string]string{"pkg.crossplane.io/provider": "provider-armada"}})
	// CloudNativePG's operator as its manifests label it, and a pod with
	// its labels in another namespace.
	cnpg := map[string]string{"app.kubernetes.io/name": "cloudnative-pg"}
	w.add(kindCNPG, netEndpoint{Name: "cnpg-controller-manager", Namespace: "cnpg-system", Labels: cnpg})
	w.add(kindStranger, netEndpoint{Name: "fake-cnpg-operator", Namespace: "other", Labels: cnpg})
	w.add(kindStranger, netEndpoint{Name: "stranger", Namespace: ns, Labels: map[string]string{"app": "stranger"}})
	w.add(kindStranger, netEndpoint{Name: "outsider", Namespace: "other", Labels: map[string]string{"app": "stranger"}})
	// An impostor in another namespace carries the server's labels, and
	// one in Armada's namespace another install's.
	server := w.find(kindArmada, "server")
	w.add(kindStranger, netEndpoint{Name: "impostor", Namespace: "other", Labels: server.Labels, NamedPorts: server.NamedPorts})
	other := maps.Clone(server.Labels)
	other[labelInstance] = "another-armada"
	w.add(kindStranger, netEndpoint{Name: "other-armada-server", Namespace: ns, Labels: other, NamedPorts: server.NamedPorts})
	return w
}

// backingPods adds the pods the in-cluster PostgreSQL and Pulsar run, with
// the labels CloudNativePG and the Apache Pulsar chart give them.
func (w *netWorld) backingPods(t *testing.T, key string, u *unstructured.Unstructured) {
	t.Helper()
	switch key {
	case keyPostgresCluster:
		name, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "manifest", "metadata", "name")
		w.add(kindPostgres, netEndpoint{Name: name + "-1", Namespace: w.in.Namespace, Labels: map[string]string{
			"cnpg.io/cluster": name, "cnpg.io/instanceName": name + "-1", "cnpg.io/instanceRole": "primary", "role": "primary", "cnpg.io/podRole": "instance",
		}})
	case keyPulsarRelease:
		full, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "values", "fullnameOverride")
		for kind, component := range map[string]string{kindPulsar: "broker", kindZooKeeper: "zookeeper", kindBookie: "bookie"} {
			w.add(kind, netEndpoint{Name: full + "-" + component + "-0", Namespace: w.in.Namespace, Labels: map[string]string{
				"app": "pulsar", "release": u.GetName(), "cluster": full, "component": component,
			}})
		}
	}
}

// instanceOf is the instance an Armada pod runs, or nil for a Job or Redis.
func (w *netWorld) instanceOf(name string) *instance {
	for _, inst := range instances(w.in) {
		if inst.Name == name {
			return inst
		}
	}
	return nil
}

// ports are every port the network's checks try, over TCP and UDP.
func (w *netWorld) ports() []int32 {
	s := w.in.Spec
	ps := []int32{portDNS, 443, 6443, portGRPC, portHTTP, portMetrics, 5432, redisPort, 6650, 6651, 80, 2181, 3181, 8000, pulsarAdminPort, s.Postgres.Port}
	for _, a := range s.Redis.Addrs {
		_, p, _ := net.SplitHostPort(a)
		ps = append(ps, port32(p))
	}
	for _, raw := range []string{s.Pulsar.URL, s.Pulsar.AdminURL} {
		if u, err := url.Parse(raw); err == nil && u.Port() != "" {
			ps = append(ps, port32(u.Port()))
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// A tableNeed is a connection an Armada pod needs, derived in this test
// from the component table's fields: to the endpoints dst picks, on port.
// Pinned needs go to one of Armada's pods, whose ingress must allow them.
type tableNeed struct {
	dst    func(netEndpoint) bool
	port   int32
	proto  corev1.Protocol
	pinned bool
}

// needs are what an Armada pod needs, from the table and the spec.
func (w *netWorld) needs(src netEndpoint) []tableNeed {
	s := w.in.Spec
	anyDst := func(netEndpoint) bool { return true }
	ofKind := func(k string) func(netEndpoint) bool {
		return func(e netEndpoint) bool { return w.kind[e.String()] == k }
	}
	armadaPod := func(name string) func(netEndpoint) bool {
		return func(e netEndpoint) bool { return w.kind[e.String()] == kindArmada && e.Name == name }
	}
	tcpTo := func(dst func(netEndpoint) bool, ports ...int32) []tableNeed {
		out := make([]tableNeed, 0, len(ports))
		for _, p := range ports {
			out = append(out, tableNeed{dst: dst, port: p, proto: corev1.ProtocolTCP})
		}
		return out
	}
	postgres := func() []tableNeed {
		if s.Postgres.Mode == modeInCluster {
			return []tableNeed{{dst: ofKind(kindPostgres), port: 5432, proto: corev1.ProtocolTCP, pinned: true}}
		}
		return tcpTo(anyDst, s.Postgres.Port)
	}
	pulsar := func(raw string) []tableNeed {
		u, _ := url.Parse(raw)
		if s.Pulsar.Mode == modeInCluster {
			return []tableNeed{{dst: ofKind(kindPulsar), port: port32(u.Port()), proto: corev1.ProtocolTCP, pinned: true}}
		}
		return tcpTo(anyDst, port32(u.Port()))
	}
	var out []tableNeed
	if src.Name != serviceRedis {
		out = append(out, tableNeed{dst: ofKind(kindDNS), port: 53, proto: corev1.ProtocolUDP}, tableNeed{dst: ofKind(kindDNS), port: 53, proto: corev1.ProtocolTCP})
	}
	switch {
	case strings.HasPrefix(src.Name, "migrate-"):
		return append(out, postgres()...)
	case src.Name == "pulsar-topics":
		return append(out, pulsar(s.Pulsar.AdminURL)...)
	case src.Name == serviceRedis:
		return out
	}
	inst := w.instanceOf(src.Name)
	if inst.KubeAPI {
		out = append(out, tcpTo(anyDst, 443, 6443)...)
	}
	for _, l := range inst.Clients {
		out = append(out, tableNeed{dst: armadaPod(l.Target), port: portGRPC, proto: corev1.ProtocolTCP, pinned: true})
	}
	if inst.LeaderElected && inst.replicas() > 1 {
		out = append(out, tableNeed{dst: armadaPod(inst.Name), port: portGRPC, proto: corev1.ProtocolTCP, pinned: true})
	}
	if inst.Database != "" {
		out = append(out, postgres()...)
	}
	if inst.RedisKey != "" {
		if s.Redis.Mode == modeInCluster {
			out = append(out, tableNeed{dst: armadaPod(serviceRedis), port: redisPort, proto: corev1.ProtocolTCP, pinned: true})
		} else {
			for _, a := range s.Redis.Addrs {
				_, p, _ := net.SplitHostPort(a)
				out = append(out, tcpTo(anyDst, port32(p))...)
			}
		}
	}
	if inst.Pulsar {
		out = append(out, pulsar(s.Pulsar.URL)...)
		if inst.IngesterMetrics != "" && s.Monitoring.Enabled {
			out = append(out, pulsar(s.Pulsar.AdminURL)...)
		}
	}
	if s.Auth.OIDC != nil && inst.Auth != authNone {
		out = append(out, tcpTo(anyDst, 443)...)
	}
	return out
}

// open says whether an Armada pod accepts a connection from anyone: users'
// APIs, the exposed executor API, and metrics for Prometheus.
func (w *netWorld) open(src, dst netEndpoint, port int32, proto corev1.Protocol) bool {
	s := w.in.Spec
	inst := w.instanceOf(dst.Name)
	if inst == nil || proto != corev1.ProtocolTCP {
		return false
	}
	serves := (inst.GRPC && port == portGRPC) || (inst.HTTP && port == portHTTP)
	exposed := slices.ContainsFunc(s.Executors, func(e v1alpha1.Executor) bool { return e.Cluster != nil }) ||
		(s.Ingress != nil && s.Ingress.ExecutorAPIHost != "")
	monitored := s.Monitoring.Enabled && (s.Monitoring.ServiceMonitors == nil || *s.Monitoring.ServiceMonitors)
	switch {
	case inst.Auth == authUsers && serves:
		return true
	case inst.Name == "scheduler" && port == portGRPC && exposed:
		return true
	case port == portMetrics && monitored && w.kind[src.String()] == kindPrometheus:
		return true
	}
	return false
}

// isPulsar says whether an endpoint kind is one of the in-cluster
// Pulsar's pods.
func isPulsar(kind string) bool {
	return kind == kindPulsar || kind == kindZooKeeper || kind == kindBookie
}

// guarded says whether the composed policies guard an endpoint kind: an
// Armada pod or one of the in-cluster Pulsar's or PostgreSQL's.
func guarded(kind string) bool { return kind == kindArmada || isPulsar(kind) || kind == kindPostgres }

// backingPeers says whether src reaches an in-cluster backing service's
// pod dst whatever Armada needs: Pulsar's pods each other, PostgreSQL's
// pods each other, and CloudNativePG's operator PostgreSQL's pods on
// PostgreSQL's and the instance manager's ports.
func backingPeers(sk, dk string, port int32, proto corev1.Protocol) bool {
	switch {
	case isPulsar(sk) && isPulsar(dk), sk == kindPostgres && dk == kindPostgres:
		return true
	case sk == kindCNPG && dk == kindPostgres:
		return proto == corev1.ProtocolTCP && (port == 5432 || port == 8000)
	}
	return false
}

// want is whether the table says src may connect to dst: src's egress
// needs it, or src is not Armada's; and dst is not guarded, is open, is
// reached by a backing service's own peers (backingPeers), or src needs
// dst in particular.
func (w *netWorld) want(src, dst netEndpoint, port int32, proto corev1.Protocol) bool {
	sk, dk := w.kind[src.String()], w.kind[dst.String()]
	egress := sk != kindArmada
	ingress := !guarded(dk) || w.open(src, dst, port, proto) || backingPeers(sk, dk, port, proto)
	if w.kind[src.String()] == kindArmada && (!egress || !ingress) {
		for _, n := range w.needs(src) {
			if n.port == port && n.proto == proto && n.dst(dst) {
				egress = true
				ingress = ingress || n.pinned
			}
		}
	}
	return egress && ingress
}

// exampleWorlds are the networks of every example claim.
func exampleWorlds(t *testing.T) map[string]*netWorld {
	t.Helper()
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	out := map[string]*netWorld{}
	for _, path := range paths {
		for i, spec := range exampleSpecs(t, path) {
			in, o := converged(t, spec)
			out[fmt.Sprintf("%s#%d", filepath.Base(path), i)] = newWorld(t, in, o)
		}
	}
	if len(out) < 8 {
		t.Fatalf("only %d example claims", len(out))
	}
	return out
}

// TestNetworkPoliciesAllowExactlyTheTable evaluates the composed
// NetworkPolicies of every example with the model of Kubernetes' semantics
// over every pair of endpoints and every port, TCP and UDP: a connection to
// or from one of Armada's pods is allowed exactly when the component table
// says Armada needs it (or it reaches an API open to users), and one to the
// in-cluster Pulsar's pods exactly when it comes from another of them or
// is a flow of Armada's to its brokers: a stranger's pod, in Armada's
// namespace or another, reaches no Pulsar pod on any port.
func TestNetworkPoliciesAllowExactlyTheTable(t *testing.T) {
	for name, w := range exampleWorlds(t) {
		t.Run(name, func(t *testing.T) {
			if len(w.model.Policies) == 0 {
				t.Fatal("no NetworkPolicies composed")
			}
			var wrong []string
			allowed, denied := 0, 0
			for _, src := range w.endpoints {
				for _, dst := range w.endpoints {
					if !guarded(w.kind[src.String()]) && !guarded(w.kind[dst.String()]) {
						continue
					}
					for _, port := range w.ports() {
						for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
							got, want := w.model.allowed(t, src, dst, port, proto), w.want(src, dst, port, proto)
							if got {
								allowed++
							} else {
								denied++
							}
							if got != want {
								wrong = append(wrong, fmt.Sprintf("%s -> %s:%d/%s: allowed %t, want %t", src, dst, port, proto, got, want))
							}
						}
					}
				}
			}
			if len(wrong) > 0 {
				t.Errorf("%d connections differ from the table, e.g.:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 25)], "\n"))
			}
			if allowed == 0 || denied == 0 {
				t.Errorf("allowed %d, denied %d: the check saw only one outcome", allowed, denied)
			}
		})
	}
}

// TestNetworkPoliciesSwitch checks NetworkPolicies are on by default and
// spec.networkPolicies: false composes none.
func TestNetworkPoliciesSwitch(t *testing.T) {
	spec := exampleSpecs(t, testutil.Example("minimal.yaml"))[0]
	cases := map[string]struct {
		reason string
		set    *bool
		want   bool
	}{
		"Default": {reason: "Unset, NetworkPolicies are composed.", want: true},
		"On":      {reason: "True composes them.", set: ptr.To(true), want: true},
		"Off":     {reason: "False composes none.", set: ptr.To(false)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := *spec.DeepCopy()
			s.NetworkPolicies = tc.set
			_, out := converged(t, s)
			got := len(objectsOfKind(out, "NetworkPolicy")) > 0
			if got != tc.want {
				t.Errorf("%s\nNetworkPolicies composed: got %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

// TestFlowTableDoc checks each of the network-policy guide's tables of
// what NetworkPolicies allow is FlowTable's, for the example it names.
func TestFlowTableDoc(t *testing.T) {
	const page = "../../docs/guides/network-policies.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, example := range []string{"production.yaml", "all-in-cluster.yaml"} {
		t.Run(example, func(t *testing.T) {
			begin, end := "<!-- flows: examples/"+example+" -->\n", "<!-- /flows -->"
			_, rest, ok := strings.Cut(string(b), begin)
			got, _, ok2 := strings.Cut(rest, end)
			if !ok || !ok2 {
				t.Fatalf("%s has no %q ... %q block", page, begin, end)
			}
			in, _ := converged(t, exampleSpecs(t, testutil.Example(example))[0])
			if diff := cmp.Diff(FlowTable(in), got); diff != "" {
				t.Errorf("%s's flow table for %s differs from FlowTable (-want +got):\n%s", page, example, diff)
			}
		})
	}
}
