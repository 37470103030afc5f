package armada

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetworkPolicies: every pod this function composes in Armada's namespace
// (components, migration and topic-init Jobs, the in-cluster Redis) is
// denied all traffic in and out, then each is allowed exactly the flows
// derived below from the component table and the spec. Each flow becomes
// an egress rule on its source's policy and, where the destination is one
// of Armada's pods, an ingress rule on the destination's.
//
// The in-cluster Pulsar's pods (the Apache Pulsar chart's brokers,
// bookies, ZooKeeper and autorecovery, and the chart's init Jobs) get two
// ingress-only policies, selecting them by the labels the chart gives every
// pod of the release: they accept connections from each other on any port,
// and the brokers accept Armada's flows to Pulsar from exactly the pods the
// flows name, on the flows' ports. Nothing else reaches them.
//
// What is allowed where the peer is not an Armada pod:
//   - DNS: any pod in kube-system, port 53 UDP and TCP.
//   - The Kubernetes API and external backing services: any destination on
//     their ports. NetworkPolicy cannot select the API server by pod, and
//     an external service's address is a host name, which NetworkPolicy
//     cannot select either; so these are allowed by port.
//   - In-cluster PostgreSQL and Pulsar: their pods by the labels
//     CloudNativePG and the Apache Pulsar chart give them.
//   - Users: the ports of components that serve users (the table's
//     authUsers rows), from anywhere: users reach them through whatever
//     ingress controller the cluster runs, and provider-armada dials the
//     server from its own namespace. The same for the scheduler's executor
//     API when it is exposed (spec.ingress.executorApiHost, or executors in
//     other clusters). Every such API authenticates its callers.
//   - Prometheus: metrics ports, from pods labelled
//     app.kubernetes.io/name=prometheus (as prometheus-operator labels
//     them) in any namespace, when ServiceMonitors are composed.
//
// Executors in other clusters get no policies: their namespace there is
// shared with the jobs they run, which Armada's users define.

// Peers and ports of NetworkPolicies outside the component table.
const (
	portDNS        = 53
	portKubeAPI    = 443
	portKubeAPIAlt = 6443
	portPulsar     = 6650
	portPulsarTLS  = 6651
	portHTTPS      = 443
	portHTTPPlain  = 80

	labelNamespaceName = "kubernetes.io/metadata.name"
	labelCNPGCluster   = "cnpg.io/cluster"
	// cnpgOperatorName is the app.kubernetes.io/name of CloudNativePG's
	// operator pods; cnpgInstanceManagerPort the port its instance
	// manager serves the operator on, in every PostgreSQL pod.
	cnpgOperatorName        = "cloudnative-pg"
	cnpgInstanceManagerPort = 8000
	labelPulsarCluster      = "cluster"
	labelPulsarRelease      = "release"
	labelPulsarPart         = "component"
	pulsarBroker            = "broker"
	prometheusName          = "prometheus"
	namespaceKubeSystem     = "kube-system"
	podTopics               = "pulsar-topics"
)

// A flow is one connection Armada needs. From and To name Armada's pods
// (an instance, a Job's pods or the in-cluster Redis); an empty name is a
// peer outside Armada's pods, Peers, where nil means anywhere.
type flow struct {
	From, To string
	Peers    []networkingv1.NetworkPolicyPeer
	// Peer describes Peers for people.
	Peer  string
	Ports []networkingv1.NetworkPolicyPort
	// Why the flow is needed.
	Why string
	// ToPulsar is set when the peer is the in-cluster Pulsar's brokers,
	// ToPostgres when it is the in-cluster PostgreSQL's pods, whose
	// policies then admit the flow.
	ToPulsar, ToPostgres bool
}

// tcp are TCP ports.
func tcp(ports ...int32) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, 0, len(ports))
	for _, p := range ports {
		proto, port := corev1.ProtocolTCP, intstr.FromInt32(p)
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	return out
}

// dnsPorts are port 53 over UDP and TCP.
func dnsPorts() []networkingv1.NetworkPolicyPort {
	udp, tcp, port := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(portDNS)
	return []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port}, {Protocol: &tcp, Port: &port}}
}

// An endpoint is where a component connects to: an Armada pod (Pod set),
// or Peers (nil: anywhere) on Ports.
type endpoint struct {
	Pod   string
	Peers []networkingv1.NetworkPolicyPeer
	Peer  string
	Ports []int32
	// Pulsar is set for the in-cluster Pulsar's brokers, Postgres for the
	// in-cluster PostgreSQL's pods.
	Pulsar, Postgres bool
}

// flowTo is a flow from an Armada pod to an endpoint.
func flowTo(from string, e endpoint, why string) flow {
	return flow{From: from, To: e.Pod, Peers: e.Peers, Peer: e.Peer, Ports: tcp(e.Ports...), Why: why, ToPulsar: e.Pulsar, ToPostgres: e.Postgres}
}

// localPods are the pods of this namespace: peers selected by labels.
func localPods(labels map[string]string) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: labels}}}
}

// anywhere is a peer by port only, described for people.
func anywhere(what string, ports []int32) endpoint {
	return endpoint{Peer: "any address (" + what + ")", Ports: ports}
}

// postgresEndpoint is where Armada's PostgreSQL is.
func (in *Install) postgresEndpoint() endpoint {
	pg := in.Spec.Postgres
	if pg.Mode == modeInCluster {
		return endpoint{
			Peers: localPods(map[string]string{labelCNPGCluster: in.cnpgClusterName()}),
			Peer:  "PostgreSQL pods (CloudNativePG " + in.cnpgClusterName() + ")", Ports: []int32{pg.Port}, Postgres: true,
		}
	}
	return anywhere("external PostgreSQL", []int32{pg.Port})
}

// redisEndpoint is where Armada's Redis is.
func (in *Install) redisEndpoint() endpoint {
	if in.Spec.Redis.Mode == modeInCluster {
		return endpoint{Pod: serviceRedis, Ports: []int32{redisPort}}
	}
	var ports []int32
	for _, a := range in.Spec.Redis.Addrs {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.ParseInt(p, 10, 32); err == nil && !slices.Contains(ports, int32(n)) {
				ports = append(ports, int32(n))
			}
		}
	}
	return anywhere("external Redis", ports)
}

// pulsarEndpoint is where Pulsar's binary protocol (admin false) or admin
// API (admin true) is.
func (in *Install) pulsarEndpoint(admin bool) endpoint {
	raw, what := in.Spec.Pulsar.URL, "external Pulsar"
	if admin {
		raw, what = in.Spec.Pulsar.AdminURL, "external Pulsar admin API"
	}
	port := urlPort(raw)
	if in.Spec.Pulsar.Mode == modeInCluster {
		return endpoint{
			Peers: localPods(in.pulsarBrokers()),
			Peer:  "Pulsar brokers (" + in.object(servicePulsar) + ")", Ports: []int32{port}, Pulsar: true,
		}
	}
	return anywhere(what, []int32{port})
}

// pulsarPods selects every pod of the in-cluster Pulsar release: the chart
// labels each with its release and its cluster (the full name the
// function sets).
func (in *Install) pulsarPods() map[string]string {
	return map[string]string{labelPulsarRelease: in.pulsarReleaseName(), labelPulsarCluster: in.object(servicePulsar)}
}

// pulsarBrokers selects the in-cluster Pulsar's brokers.
func (in *Install) pulsarBrokers() map[string]string {
	l := in.pulsarPods()
	l[labelPulsarPart] = pulsarBroker
	return l
}

// urlPort is a URL's port, or its scheme's default.
func urlPort(raw string) int32 {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	if p, err := strconv.ParseInt(u.Port(), 10, 32); err == nil {
		return int32(p)
	}
	switch u.Scheme {
	case "pulsar":
		return portPulsar
	case "pulsar+ssl":
		return portPulsarTLS
	case "http":
		return portHTTPPlain
	default:
		return portHTTPS
	}
}

// servedPorts are the ports a component serves besides metrics.
func servedPorts(c *component) []int32 {
	var out []int32
	for _, p := range ports(c) {
		if p.Name != portNameMetrics {
			out = append(out, p.ContainerPort)
		}
	}
	return out
}

// networkPolicyOn says whether NetworkPolicies are composed.
func (in *Install) networkPolicyOn() bool {
	return in.Spec.NetworkPolicies == nil || *in.Spec.NetworkPolicies
}

// flows are every connection Armada's pods need, derived from the
// component table and the spec, in a stable order.
func (in *Install) flows(insts []*instance) []flow {
	var out []flow
	open := in.exposedPorts(insts)
	for _, inst := range insts {
		if inst.Executor == nil || remoteCluster(inst.Executor) == nil {
			out = append(out, in.instanceFlows(inst, open[inst.component.Name])...)
		}
	}
	for _, m := range migrations {
		name := "migrate-" + m.Name
		out = append(out, dnsFlow(name), flowTo(name, in.postgresEndpoint(), "postgres"))
	}
	out = append(out, in.prunerFlows()...)
	out = append(out, in.drillFlows()...)
	out = append(out, in.sentinelFlows()...)
	return append(out, dnsFlow(podTopics), flowTo(podTopics, in.pulsarEndpoint(true), "ADMIN_URL"))
}

// dnsFlow is a pod's DNS lookups.
func dnsFlow(pod string) flow {
	return flow{From: pod, Peers: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{labelNamespaceName: namespaceKubeSystem},
	}}}, Peer: "DNS (pods in kube-system)", Ports: dnsPorts(), Why: "name resolution"}
}

// exposedPorts are the component ports reached from outside Armada's pods
// besides users' APIs, by component: those an Ingress routes to, and the
// targets of links from executors in other clusters.
func (in *Install) exposedPorts(insts []*instance) map[string][]int32 {
	open := map[string][]int32{}
	expose := func(component string, port int32) {
		if !slices.Contains(open[component], port) {
			open[component] = append(open[component], port)
		}
	}
	for _, r := range in.ingressRoutes() {
		for _, p := range ports(componentNamed(r.component)) {
			if p.Name == r.port {
				expose(r.component, p.ContainerPort)
			}
		}
	}
	for _, inst := range insts {
		if inst.Executor != nil && remoteCluster(inst.Executor) != nil {
			for _, l := range inst.Clients {
				expose(l.Target, portGRPC)
			}
		}
	}
	return open
}

// instanceFlows are one local instance's connections: out to what its
// table row uses, in from users, exposed ports and Prometheus.
func (in *Install) instanceFlows(inst *instance, exposed []int32) []flow {
	name := inst.Name
	out := []flow{dnsFlow(name)}
	if inst.KubeAPI {
		out = append(out, flowTo(name, anywhere("Kubernetes API", []int32{portKubeAPI, portKubeAPIAlt}), "Kubernetes API"))
	}
	for _, l := range inst.Clients {
		out = append(out, flowTo(name, endpoint{Pod: l.Target, Ports: []int32{portGRPC}}, l.Key))
	}
	if inst.LeaderElected && inst.replicas() > 1 {
		out = append(out, flowTo(name, endpoint{Pod: name, Ports: []int32{portGRPC}}, "leader.leaderConnection"))
	}
	if inst.Database != "" {
		out = append(out, flowTo(name, in.postgresEndpoint(), "postgres"))
	}
	if inst.RedisKey != "" {
		out = append(out, flowTo(name, in.redisEndpoint(), inst.RedisKey))
		if in.sentinelOn() {
			out = append(out, flowTo(name, endpoint{Pod: componentSentinel, Ports: []int32{sentinelPort}}, inst.RedisKey+".masterName"))
		}
	}
	if inst.Pulsar {
		out = append(out, flowTo(name, in.pulsarEndpoint(false), "pulsar.URL"))
		if inst.IngesterMetrics != "" && in.ingesterLag() {
			out = append(out, flowTo(name, in.pulsarEndpoint(true), "pulsar.restURL"))
		}
	}
	if o := in.Spec.Auth.OIDC; o != nil && inst.Auth != authNone {
		out = append(out, flowTo(name, anywhere("OIDC provider", []int32{urlPort(o.ProviderURL)}), "auth.openIdAuth.providerUrl"))
	}
	switch {
	case inst.Auth == authUsers:
		out = append(out, flow{To: name, Peer: "users (any address)", Ports: tcp(servedPorts(inst.component)...), Why: "users"})
	case len(exposed) > 0:
		out = append(out, flow{To: name, Peer: "executors and users (any address)", Ports: tcp(exposed...), Why: "exposed"})
	}
	if in.serviceMonitorsOn() {
		out = append(out, flow{
			To: name, Ports: tcp(portMetrics), Why: "metrics",
			Peers: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{labelName: prometheusName}},
			}},
			Peer: "Prometheus (app.kubernetes.io/name=prometheus, any namespace)",
		})
	}
	return out
}

// componentNamed is the table row of a component.
func componentNamed(name string) *component {
	for i := range components {
		if components[i].Name == name {
			return &components[i]
		}
	}
	return nil
}

// policyPods are the names of Armada's pods in this namespace, each of
// which gets its own policy.
func (in *Install) policyPods(insts []*instance) []string {
	var out []string
	for _, inst := range insts {
		if inst.Executor == nil || remoteCluster(inst.Executor) == nil {
			out = append(out, inst.Name)
		}
	}
	for _, m := range migrations {
		out = append(out, "migrate-"+m.Name)
	}
	out = append(out, in.prunerPods()...)
	out = append(out, in.drillPods()...)
	out = append(out, podTopics)
	if in.Spec.Redis.Mode == modeInCluster {
		out = append(out, serviceRedis)
	}
	if in.sentinelOn() {
		out = append(out, componentSentinel)
	}
	return out
}

// networkPolicies composes the default deny and one policy per pod.
func (r *renderer) networkPolicies(insts []*instance) {
	in := r.in
	if !in.networkPolicyOn() {
		return
	}
	deny := in.networkPolicy("netpol-default-deny", "netpol", map[string]string{labelName: "armada", labelInstance: in.Name})
	r.add("netpol-default-deny", deny, r.exists("netpol-default-deny"))
	flows := in.flows(insts)
	for _, pod := range in.policyPods(insts) {
		np := in.networkPolicy("netpol-"+pod, pod, in.selector(pod))
		for _, f := range flows {
			if f.From == pod {
				to := f.Peers
				if f.To != "" {
					to = localPods(in.selector(f.To))
				}
				np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: to, Ports: f.Ports})
			}
			if f.To == pod {
				from := f.Peers
				if f.From != "" {
					from = localPods(in.selector(f.From))
				}
				np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: from, Ports: f.Ports})
			}
		}
		r.add("netpol-"+pod, np, r.exists("netpol-"+pod))
	}
	r.pulsarNetworkPolicies(flows)
	r.postgresNetworkPolicy(flows)
}

// postgresNetworkPolicy guards the in-cluster PostgreSQL's pods (every pod
// CloudNativePG labels with the cluster: instances and its bootstrap and
// join Jobs): ingress from each other on any port (replication, the
// instance managers), from CloudNativePG's operator on PostgreSQL's and
// the instance manager's ports, and from the flows that go there. Egress
// is not restricted: the operator's pods are not Armada's to describe.
func (r *renderer) postgresNetworkPolicy(flows []flow) {
	in := r.in
	pg := in.Spec.Postgres
	if pg.Mode != modeInCluster {
		return
	}
	pods := map[string]string{labelCNPGCluster: in.cnpgClusterName()}
	np := in.networkPolicy("netpol-postgres", "netpol", pods)
	np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{
		{From: localPods(pods)},
		{
			From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: pg.InCluster.OperatorNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{labelName: cnpgOperatorName}},
			}},
			Ports: tcp(pg.Port, cnpgInstanceManagerPort),
		},
	}
	for _, f := range flows {
		if f.ToPostgres {
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: localPods(in.selector(f.From)), Ports: f.Ports})
		}
	}
	r.add("netpol-postgres", np, r.exists("netpol-postgres"))
}

// pulsarNetworkPolicies guard the in-cluster Pulsar's pods: ingress from
// each other, and to the brokers from the flows that go there. Egress is
// not restricted: the chart's pods are not Armada's to describe.
func (r *renderer) pulsarNetworkPolicies(flows []flow) {
	in := r.in
	if in.Spec.Pulsar.Mode != modeInCluster {
		return
	}
	ingressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	all := in.networkPolicy("netpol-pulsar", "netpol", in.pulsarPods())
	all.Spec.PolicyTypes = ingressOnly
	all.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: localPods(in.pulsarPods())}}
	r.add("netpol-pulsar", all, r.exists("netpol-pulsar"))
	brokers := in.networkPolicy("netpol-pulsar-broker", "netpol", in.pulsarBrokers())
	brokers.Spec.PolicyTypes = ingressOnly
	for _, f := range flows {
		if f.ToPulsar {
			brokers.Spec.Ingress = append(brokers.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: localPods(in.selector(f.From)), Ports: f.Ports})
		}
	}
	r.add("netpol-pulsar-broker", brokers, r.exists("netpol-pulsar-broker"))
}

// networkPolicy is a policy for the pods a selector picks, denying
// everything it does not list in both directions.
func (in *Install) networkPolicy(suffix, component string, selector map[string]string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: in.meta(in.object(suffix), component),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// FlowTable is a Markdown table of the flows NetworkPolicies allow for an
// install: who may connect to whom, on which ports, and why.
func FlowTable(in *Install) string {
	var b strings.Builder
	b.WriteString("| From | To | Ports | Why |\n|---|---|---|---|\n")
	for _, f := range in.flows(instances(in)) {
		from, to := f.From, f.To
		if from == "" {
			from = f.Peer
		}
		if to == "" {
			to = f.Peer
		}
		var ports []string
		for _, p := range f.Ports {
			ports = append(ports, fmt.Sprintf("%s %s", *p.Protocol, p.Port.String()))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", from, to, strings.Join(ports, ", "), f.Why)
	}
	return b.String()
}
