package node

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Services on the node: kube-proxy translates the Service range for the
// node's pods (and the host), the control plane's API server is reached
// through the kubernetes Service (an EndpointSlice the node writes, to a
// relay on the bridge's address, since the API server listens on
// loopback only), and CoreDNS answers the cluster's names behind the
// kube-dns Service. Like the enforcer, kube-proxy's chains are the
// machine's; the netfilter lock covers both.

// ProcProxy names kube-proxy's process and its log, kube-proxy.log.
const ProcProxy = "kube-proxy"

// CoreDNSImage is the cluster DNS image: CoreDNS as tools/coredns builds
// it, under the name Kubernetes' own manifests give it.
const CoreDNSImage = "registry.k8s.io/coredns/coredns:" + CoreDNSVersion

// dnsName names CoreDNS's objects in kube-system; the kube-dns Service is
// named as in every cluster.
const (
	dnsName    = "coredns"
	dnsService = "kube-dns"
)

// proxyName names kube-proxy's ServiceAccount and ClusterRoleBinding.
func (l layout) proxyName() string { return l.Name + "-proxy" }

// guardRules keep the host's traffic on the machine: what it sends to the
// Service range that kube-proxy did not translate to a pod is refused,
// not routed to the uplink (TCP with a reset, which the kernel does not
// rate-limit as it does ICMP errors). Each carries the node's name as its
// comment. The pods' traffic is kept by guardRoute.
func (l layout) guardRules() [][]string {
	c := []string{"-m", "comment", "--comment", l.Name, "-j", "REJECT"}
	out := []string{"OUTPUT", "-d", controlplane.ServiceRange}
	return [][]string{
		append(slices.Concat(out, []string{"-p", "tcp"}, c), "--reject-with", "tcp-reset"),
		slices.Concat(out, c),
	}
}

// guardRoute is the routing rule that keeps the pods' traffic on the
// machine: from the pod range, in through the bridge, to the Service range
// is prohibited. Routing decides after kube-proxy's translation, so only
// what it did not translate meets the rule, whatever the filter table's
// chains accept (kube-router's accept what policies allow, before any rule
// of ours). The host's own connections, which leave from the bridge's
// address (in the pod range), do not come in through the bridge.
func (l layout) guardRoute() []string {
	return []string{"from", l.Subnet.String(), "iif", l.Bridge, "to", controlplane.ServiceRange, "prohibit"}
}

// startServices lets the bridge route (its pods' Service traffic, once
// translated, goes back out the bridge), adds the guard rules, routes the
// Service range to the bridge for the host's own clients, starts the
// API server's relay and kube-proxy, points the kubernetes Service at the
// relay and starts CoreDNS, waiting until it answers.
func (n *Node) startServices(ctx context.Context, cfg *rest.Config, b binaries) error {
	t := time.Now()
	l := n.l
	if err := os.WriteFile(filepath.Join(procFS, "sys", "net", "ipv4", "conf", l.Bridge, "forwarding"), []byte("1"), 0o600); err != nil {
		return errors.Wrapf(err, "cannot turn on forwarding for %s", l.Bridge)
	}
	// Inserted last first, so that the TCP rule comes before the other.
	for _, r := range slices.Backward(l.guardRules()) {
		if err := iptables(ctx, append([]string{"-I"}, r...)...); err != nil {
			return err
		}
	}
	if err := ip(ctx, append([]string{"rule", "add"}, l.guardRoute()...)...); err != nil {
		return err
	}
	// The host's own connections to Services (clients on this machine:
	// armadactl, a browser, provider-armada) leave from the bridge's
	// address, to which the pods have a route, not the uplink's; the
	// route goes with the bridge. One node runs at a time (the network
	// lock), so the range is routed to one bridge.
	if err := ip(ctx, "route", "replace", controlplane.ServiceRange, "dev", l.Bridge, "src", l.gateway().String()); err != nil {
		return err
	}
	if err := n.startRelay(ctx, cfg.Host); err != nil {
		return err
	}
	proxyID := identity{Name: l.proxyName(), ClusterRole: "system:node-proxier", Kubeconfig: l.path("kube-proxy.kubeconfig")}
	if err := n.writeIdentity(ctx, cfg, proxyID); err != nil {
		return err
	}
	ports, err := freeport.Reserve(ctx, 2)
	if err != nil {
		return errors.Wrap(err, "cannot reserve ports")
	}
	pc, err := kubeProxyConfig(l, l.path("kube-proxy.kubeconfig"), proxyPorts{Healthz: ports[0], Metrics: ports[1]})
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.path("kube-proxy.yaml"), pc, 0o600); err != nil {
		return errors.Wrap(err, "cannot write kube-proxy's configuration")
	}
	p, err := startProcess(ProcProxy, b.KubeProxy, l.path(ProcProxy+".log"), []string{"--config=" + l.path("kube-proxy.yaml"), "--v=2"}, nil)
	if err != nil {
		return err
	}
	n.proxy = p
	if err := p.waitFor(ctx, "kube-proxy's chains", func(ctx context.Context) error {
		return iptables(ctx, "-t", "nat", "-S", "KUBE-SERVICES")
	}); err != nil {
		return err
	}
	if err := n.writeKubernetesEndpoints(ctx); err != nil {
		return err
	}
	if err := n.startCoreDNS(ctx); err != nil {
		return err
	}
	n.logf("node %s: kube-proxy, the API server's Service and CoreDNS at %s ready in %s", l.Name, ClusterDNS, time.Since(t).Round(time.Millisecond))
	return nil
}

// APIServerPort is the port of the API server's relay on the bridge's
// address, where the kubernetes Service's EndpointSlice points: the port
// a cluster's API server usually listens on, which the composed
// NetworkPolicies' egress rules for the API server name.
const APIServerPort = 6443

// startRelay relays the bridge's APIServerPort to the API server at host
// (a URL).
func (n *Node) startRelay(ctx context.Context, host string) error {
	u, err := url.Parse(host)
	if err != nil {
		return errors.Wrapf(err, "cannot parse the API server's address %q", host)
	}
	return n.Relay(ctx, APIServerPort, u.Host)
}

// Relay accepts the node's pods' connections on the bridge's address
// (HostAddress) at port and relays each to addr, a service on the host,
// until the node stops: a backing service listening on loopback is
// reached by pods there, as a service outside the cluster would be.
func (n *Node) Relay(ctx context.Context, port int, addr string) error {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(n.l.gateway().String(), strconv.Itoa(port)))
	if err != nil {
		return errors.Wrapf(err, "cannot listen on the bridge's port %d to relay %s", port, addr)
	}
	n.relays = append(n.relays, lis)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go relay(c, addr)
		}
	}()
	return nil
}

// relay copies between c and a new connection to addr, both ways.
func relay(c net.Conn, addr string) {
	defer func() { _ = c.Close() }()
	up, err := (&net.Dialer{Timeout: 10 * time.Second}).Dial("tcp", addr)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	testutil.Join(c, up)
}

// kubernetesSlice is the EndpointSlice the node writes for the kubernetes
// Service: the relay. The control plane runs no endpoint reconciler.
const kubernetesSlice = "kubernetes"

// writeKubernetesEndpoints points the kubernetes Service at the relay.
func (n *Node) writeKubernetesEndpoints(ctx context.Context) error {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesSlice, Namespace: metav1.NamespaceDefault, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   n.l.Name,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{n.l.gateway().String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(APIServerPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	_, err := n.client.DiscoveryV1().EndpointSlices(es.Namespace).Create(ctx, es, metav1.CreateOptions{})
	return errors.Wrap(err, "cannot create the kubernetes Service's EndpointSlice")
}

// dnsRules are what CoreDNS's kubernetes plugin reads.
func dnsRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}
}

// startCoreDNS creates CoreDNS in kube-system (its ServiceAccount, a
// read-only ClusterRole, its Corefile, a Deployment bound to this node and
// the kube-dns Service at ClusterDNS) and waits until the Service
// answers a lookup from the host.
func (n *Node) startCoreDNS(ctx context.Context) error {
	ns := metav1.NamespaceSystem
	name := n.dnsObjectName()
	labels := map[string]string{"k8s-app": dnsService}
	cs := n.client
	create := func(what string, err error) error {
		if err != nil && !kerrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create %s", what)
		}
		return nil
	}
	if err := create("CoreDNS's ServiceAccount", createErr(cs.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: dnsName}}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	if err := create("CoreDNS's ClusterRole", createErr(cs.RbacV1().ClusterRoles().Create(ctx,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: dnsRules()}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	if err := create("CoreDNS's ClusterRoleBinding", createErr(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: dnsName, Namespace: ns}},
	}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	if err := create("CoreDNS's Corefile", createErr(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName}, Data: map[string]string{"Corefile": corefile(n.HostAddress(), n.hostNames)},
	}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	dep := coreDNSDeployment(n.l.Name, labels)
	if err := create("CoreDNS's Deployment", createErr(cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}))); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNS,
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if err := create("the kube-dns Service", createErr(cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}))); err != nil {
		return err
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ClusterDNS, "53"))
	}}
	want := "kubernetes.default.svc." + ClusterDomain
	return n.proxy.waitFor(ctx, "CoreDNS answering "+want, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, want)
		if err != nil {
			return errors.Wrapf(err, "cannot resolve %s (CoreDNS: %s)", want, n.podsState(ctx, ns, labels))
		}
		if len(addrs) != 1 || addrs[0] != controlplane.KubernetesService {
			return errors.Errorf("%s resolves to %v, not %s", want, addrs, controlplane.KubernetesService)
		}
		return nil
	})
}

// createErr drops the object of a Create's result.
func createErr[T any](_ T, err error) error { return err }

// dnsObjectName names CoreDNS's ClusterRole and ClusterRoleBinding, which
// are cluster-wide, after the node.
func (n *Node) dnsObjectName() string { return n.l.Name + "-coredns" }

// coreDNSDeployment runs CoreDNS on node as uid 65532 with a read-only
// root, restricted, with the ServiceAccount token the ServiceAccount
// admission plugin would mount (the control plane runs without it).
func coreDNSDeployment(node string, labels map[string]string) *appsv1.Deployment {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		RunAsGroup:     ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		// Port 53 as a user: a safe sysctl, allowed under restricted.
		Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:                     node,
					ServiceAccountName:           dnsName,
					AutomountServiceAccountToken: ptr.To(false),
					DNSPolicy:                    corev1.DNSDefault,
					SecurityContext:              sc,
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: CoreDNSImage,
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 1,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/coredns", ReadOnly: true},
							{Name: "token", MountPath: serviceAccountDir, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: dnsName},
						}}},
						ServiceAccountVolume("token"),
					},
				},
			},
		},
	}
}

// serviceAccountDir is where in-cluster clients read their token.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ServiceAccountVolume is the projected volume the ServiceAccount
// admission plugin adds to a pod (its token, the cluster's CA from the
// kube-root-ca.crt ConfigMap, its namespace), for pods on this control
// plane, which runs without that plugin; mount it at
// /var/run/secrets/kubernetes.io/serviceaccount.
func ServiceAccountVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
		{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
		}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
			Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
		}}}},
	}}}}
}

// stopServices stops kube-proxy and the relay, removes kube-proxy's
// chains (kube-proxy --cleanup) and the guard rules. The bridge's
// forwarding setting goes with the bridge.
func (n *Node) stopServices(ctx context.Context, b binaries) error {
	var errs []error
	if n.proxy != nil {
		errs = append(errs, n.proxy.stop())
		if out, err := exec.CommandContext(ctx, b.KubeProxy, "--cleanup").CombinedOutput(); err != nil { //nolint:gosec // kube-proxy from the tool cache.
			errs = append(errs, errors.Wrapf(err, "cannot remove kube-proxy's chains: %s", testutil.Tail(string(out), 5)))
		}
		errs = append(errs, deleteEmptyChain(ctx, "KUBE-FIREWALL"))
	}
	for _, l := range n.relays {
		_ = l.Close()
	}
	return errors.Join(append(errs, deleteGuardRules(ctx, n.l))...)
}

// deleteGuardRules deletes the node's guard route, and every rule of the
// filter table that carries the node's name as its comment: its guard
// rules, also when a sweep no longer knows its pod range.
func deleteGuardRules(ctx context.Context, l layout) error {
	// Every copy of the route, until ip finds none.
	for l.Subnet.IsValid() && ip(ctx, append([]string{"rule", "del"}, l.guardRoute()...)...) == nil {
	}
	for _, chain := range []string{"FORWARD", "OUTPUT"} {
		out, err := exec.CommandContext(ctx, "iptables", "-S", chain).Output() //nolint:gosec // A fixed chain.
		if err != nil {
			return errors.Wrapf(err, "cannot list the %s chain", chain)
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			rule, ok := strings.CutPrefix(line, "-A ")
			if !ok || !strings.Contains(line, "--comment "+l.Name+" ") {
				continue
			}
			if err := iptables(ctx, append([]string{"-D"}, strings.Fields(rule)...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteEmptyChain deletes chain from the filter table, and the jumps to
// it from INPUT, FORWARD and OUTPUT, if it holds no rule: kube-proxy
// --cleanup leaves its empty KUBE-FIREWALL.
func deleteEmptyChain(ctx context.Context, chain string) error {
	out, err := exec.CommandContext(ctx, "iptables", "-S", chain).Output() //nolint:gosec // A fixed chain.
	if err != nil {
		return nil //nolint:nilerr // No such chain: nothing to delete.
	}
	if strings.Count(strings.TrimSpace(string(out)), "\n") > 0 {
		return nil
	}
	for _, from := range []string{"INPUT", "FORWARD", "OUTPUT"} {
		for iptables(ctx, "-C", from, "-j", chain) == nil {
			if err := iptables(ctx, "-D", from, "-j", chain); err != nil {
				return err
			}
		}
	}
	return iptables(ctx, "-X", chain)
}

// deleteServiceObjects deletes what the node created for its Services:
// CoreDNS's objects, the kubernetes Service's EndpointSlice and
// kube-proxy's identity.
func (n *Node) deleteServiceObjects(ctx context.Context) error {
	ns := metav1.NamespaceSystem
	cs := n.client
	del := func(what string, err error) error {
		if err != nil && !kerrors.IsNotFound(err) {
			return errors.Wrapf(err, "cannot delete %s", what)
		}
		return nil
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	return errors.Join(
		del("the kube-dns Service", cs.CoreV1().Services(ns).Delete(ctx, dnsService, opts)),
		del("CoreDNS's Deployment", cs.AppsV1().Deployments(ns).Delete(ctx, dnsName, opts)),
		del("CoreDNS's Corefile", cs.CoreV1().ConfigMaps(ns).Delete(ctx, dnsName, opts)),
		del("CoreDNS's ServiceAccount", cs.CoreV1().ServiceAccounts(ns).Delete(ctx, dnsName, opts)),
		del("CoreDNS's ClusterRoleBinding", cs.RbacV1().ClusterRoleBindings().Delete(ctx, n.dnsObjectName(), opts)),
		del("CoreDNS's ClusterRole", cs.RbacV1().ClusterRoles().Delete(ctx, n.dnsObjectName(), opts)),
		del("the kubernetes Service's EndpointSlice", cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Delete(ctx, kubernetesSlice, opts)),
		del("kube-proxy's ClusterRoleBinding", cs.RbacV1().ClusterRoleBindings().Delete(ctx, n.l.proxyName(), opts)),
		del("kube-proxy's ServiceAccount", cs.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Delete(ctx, n.l.proxyName(), opts)),
	)
}

// guardLeftovers are the node's guard rules and route still on the
// machine.
func guardLeftovers(ctx context.Context, l layout) []string {
	out, _ := exec.CommandContext(ctx, "iptables-save", "-t", "filter").Output()
	var left []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "--comment "+l.Name) {
			left = append(left, "rule "+line)
		}
	}
	out, _ = exec.CommandContext(ctx, "ip", "rule", "show").Output()
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "from "+l.Subnet.String()+" ") {
			left = append(left, "ip rule "+strings.TrimSpace(line))
		}
	}
	return left
}

// podsState summarizes the state of the pods labels select in ns, for
// errors: phase, and each container's state and restarts.
func (n *Node) podsState(ctx context.Context, ns string, labels map[string]string) string {
	pods, err := n.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})})
	if err != nil {
		return "cannot list pods: " + err.Error()
	}
	if len(pods.Items) == 0 {
		// Kubernetes' workload controllers make a Deployment's pods.
		return "no pod: is kube-controller-manager running its workload controllers (controlplane.Options.Workloads)?"
	}
	out := make([]string, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		out = append(out, testutil.PodState(p, func(c string) string {
			return testutil.Tail(dropRepeats(n.PodLogs(ns, p.Name, c)), 10)
		}))
	}
	return strings.Join(out, "; ")
}

// dropRepeats drops the lines of a container log (each "TIME STREAM TAG
// MESSAGE") whose message repeats an earlier one, so that a log of one
// line each second still shows how it began.
func dropRepeats(log string) string {
	seen := map[string]bool{}
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		f := strings.SplitN(line, " ", 4)
		msg := f[len(f)-1]
		if !seen[msg] {
			seen[msg] = true
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
