package jobflow

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// On a real node (package node) the composed pods run as containers and
// reach the far ends as they would in a cluster: by Service names that
// CoreDNS resolves, kube-proxy translates to the node's bridge address,
// where PostgreSQL and Redis are relayed to their loopback ports and
// Pulsar's broker listens itself (clients follow the address it
// advertises). Clients on this machine reach the composed Services
// through Names, relayed to the Services' addresses.

// A Node is what the job flow uses of a real node (package node's Node,
// which this package cannot import: its tests use this one).
type Node interface {
	// HostAddress is the node's bridge address, where its pods reach
	// this machine.
	HostAddress() string
	// Relay relays the node's pods' connections to HostAddress:port to
	// addr.
	Relay(ctx context.Context, port int, addr string) error
	// ContainerOutput is what a container of pod ns/name wrote.
	ContainerOutput(ns, name, container string) string
}

// StartNodeBackends starts the far ends of o for the pods of node n: the
// claim's addresses must be Service names (<name>.<namespace>.svc, with
// or without .cluster.local), for which it creates the Services and their
// EndpointSlices in the cluster cs reaches.
func StartNodeBackends(t TB, n Node, cs kubernetes.Interface, o BackendOptions) *Backends {
	t.Helper()
	ports := map[string]int{}
	for _, addr := range []string{o.PostgresAddr, o.RedisAddr, o.PulsarAddr, o.PulsarAdminAddr} {
		_, port, err := net.SplitHostPort(addr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			t.Fatalf("cannot read the port of the claim's address %q", addr)
		}
		ports[addr] = p
	}
	b := &Backends{
		Postgres: testenv.StartPostgres(t),
		Redis:    testenv.StartRedisWithPassword(t, o.RedisPassword),
		Pulsar: testenv.StartPulsarWithOptions(t, testenv.PulsarOptions{
			Host: n.HostAddress(), BrokerPort: ports[o.PulsarAddr], WebPort: ports[o.PulsarAdminAddr],
		}),
		Names: podrun.NewNames(),
	}
	t.Cleanup(b.Names.Close)
	b.createDatabases(t, o)
	relays := map[int]string{
		ports[o.PostgresAddr]: net.JoinHostPort(b.Postgres.Host, strconv.Itoa(b.Postgres.Port)),
		ports[o.RedisAddr]:    b.Redis.Addr(),
	}
	for port, to := range relays {
		if err := n.Relay(t.Context(), port, to); err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range []string{o.PostgresAddr, o.RedisAddr, o.PulsarAddr, o.PulsarAdminAddr} {
		if err := hostService(t, cs, addr, n.HostAddress()); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// hostService makes the Service addr (name.namespace.svc:port) reach
// host at port: the Service, without a selector, gets the port, and its
// EndpointSlice the address.
func hostService(t TB, cs kubernetes.Interface, addr, host string) error {
	h, port, _ := net.SplitHostPort(addr)
	parts := strings.Split(strings.TrimSuffix(h, ".cluster.local"), ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return errors.Errorf("on a real node the claim's address %q must be a Service's name, <name>.<namespace>.svc", addr)
	}
	name, ns := parts[0], parts[1]
	p64, _ := strconv.ParseInt(port, 10, 32)
	p := int32(p64)
	pname := "p" + port
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create namespace %s", ns)
	}
	sp := corev1.ServicePort{Name: pname, Port: p, Protocol: corev1.ProtocolTCP}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case kerrors.IsNotFound(err):
		svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{sp}}}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return errors.Wrapf(err, "cannot create Service %s/%s", ns, name)
		}
	case err != nil:
		return errors.Wrapf(err, "cannot get Service %s/%s", ns, name)
	case !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == p }):
		svc.Spec.Ports = append(svc.Spec.Ports, sp)
		if _, err := cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			return errors.Wrapf(err, "cannot add port %d to Service %s/%s", p, ns, name)
		}
	}
	// One EndpointSlice per port: a port added later adds a slice.
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-" + pname, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(pname), Port: ptr.To(p), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create the EndpointSlice of Service %s/%s", ns, name)
	}
	return nil
}

// RelayServices makes each port of each Service of namespace ns with a
// cluster address reach that address through names, at the Service's
// name <name>.<ns>.svc: clients on this machine (armadactl, Lookout's API
// client, provider-armada, a browser) reach the composed Services as a
// pod does, through kube-proxy.
func RelayServices(t TB, names *podrun.Names, cs kubernetes.Interface, ns string) {
	t.Helper()
	svcs, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("cannot list the Services of namespace %s: %v", ns, err)
	}
	for _, svc := range svcs.Items {
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		for _, p := range svc.Spec.Ports {
			from := fmt.Sprintf("%s.%s.svc:%d", svc.Name, ns, p.Port)
			if err := names.Relay(from, net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port)))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// NodeContainerLogs returns a function that writes what a container of
// pod ns/pod on node n wrote to a file and returns it, for
// WaitSubmitCheckLogged.
func NodeContainerLogs(t TB, n Node, ns, pod, container string) func() []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), container+".log")
	return func() []string {
		if err := os.WriteFile(f, []byte(n.ContainerOutput(ns, pod, container)), 0o600); err != nil {
			t.Fatalf("cannot write %s's log: %v", container, err)
		}
		return []string{f}
	}
}

// NodeJobSpec is JobSpec for a real node: its container runs image (the
// node's job image, node.JobImage) with args, which choose how long it
// runs and its exit code.
func NodeJobSpec(image, namespace string, args ...string) map[string]any {
	j := JobSpec(namespace, nil)
	ctrs, _ := j["podSpec"].(map[string]any)["containers"].([]any)
	ctr, _ := ctrs[0].(map[string]any)
	delete(ctr, "command")
	ctr["image"] = image
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	ctr["args"] = a
	return j
}

// PodsState summarises the pods of namespace ns that are not Ready, for
// progress messages (testutil.PodState).
func PodsState(t TB, cs kubernetes.Interface, ns string) string {
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			continue
		}
		out = append(out, testutil.PodState(&p, nil))
	}
	return strings.Join(out, "; ")
}
