package node

import (
	"context"
	"os/exec"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// The node enforces NetworkPolicies with kube-router's firewall controller
// alone (no routing, no service proxy), as kube-router runs beside another
// CNI: it keeps iptables chains and ipsets for the pods bound to its Node,
// on the bridge's traffic (br_netfilter). A new pod's traffic passes until
// kube-router has programmed it, as with most enforcers; its
// --netpol-default-deny would close that window but refuses every address
// of the pod range that is not a pod's, the bridge's own among them, where
// pods reach the API server's relay and the host's services.
//
// kube-router names its chains and ipsets the same on every machine
// (KUBE-ROUTER-FORWARD, KUBE-POD-FW-..., kube-router-local-pods, ...), in
// the machine's own netfilter tables: two enforcing nodes on one machine
// would undo each other's rules. The node holds the machine's network lock
// (internal/harness/netlock) exclusively while it runs, so a second node
// waits for it.

// ProcEnforcer names the enforcer's process and its log, enforcer.log.
const ProcEnforcer = "enforcer"

// enforcerRules are what kube-router's firewall controller reads: it
// watches these (its informers start for all of them) and changes nothing
// in the API.
func enforcerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "namespaces", "nodes", "services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// enforcerName names the enforcer's ServiceAccount, ClusterRole and
// ClusterRoleBinding.
func (l layout) enforcerName() string { return l.Name + "-netpol" }

// startEnforcer starts kube-router's firewall controller under its own
// read-only identity and waits until its chains are in place.
func (n *Node) startEnforcer(ctx context.Context, cfg *rest.Config, b binaries) error {
	t := time.Now()
	l := n.l
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: l.enforcerName()}, Rules: enforcerRules()}
	if _, err := n.client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return errors.Wrapf(err, "cannot create ClusterRole %s", cr.Name)
	}
	kubeconfig := l.path("enforcer.kubeconfig")
	if err := n.writeIdentity(ctx, cfg, identity{Name: l.enforcerName(), ClusterRole: cr.Name, Kubeconfig: kubeconfig}); err != nil {
		return err
	}
	p, err := startProcess(ProcEnforcer, b.KubeRouter, l.path(ProcEnforcer+".log"), []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + l.Name,
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--enable-cni=false",
		"--health-port=0",
		"--metrics-port=0",
		"--service-cluster-ip-range=" + serviceRange,
		"--v=2",
	}, nil)
	if err != nil {
		return err
	}
	n.enforcer = p
	err = p.waitFor(ctx, "kube-router's chains", func(ctx context.Context) error {
		return iptables(ctx, "-S", "KUBE-ROUTER-FORWARD")
	})
	if err == nil {
		n.logf("node %s: kube-router enforcing NetworkPolicies in %s", l.Name, time.Since(t).Round(time.Millisecond))
	}
	return err
}

// serviceRange is the control plane's Service range
// (internal/harness/controlplane).
const serviceRange = controlplane.ServiceRange

// stopEnforcer stops kube-router and removes its chains and ipsets
// (kube-router --cleanup-config).
func (n *Node) stopEnforcer(ctx context.Context, b binaries) error {
	if n.enforcer == nil {
		return nil
	}
	var errs []error
	if n.enforcer != nil {
		errs = append(errs, n.enforcer.stop())
	}
	if out, err := exec.CommandContext(ctx, b.KubeRouter, "--cleanup-config").CombinedOutput(); err != nil { //nolint:gosec // kube-router from the tool cache.
		errs = append(errs, errors.Wrapf(err, "cannot remove kube-router's chains: %s", testutil.Tail(string(out), 5)))
	}
	if left := netfilterLeftovers(ctx); len(left) > 0 {
		errs = append(errs, errors.Errorf("kube-router --cleanup-config left %s", strings.Join(left, ", ")))
	}
	return errors.Join(errs...)
}

// netfilterLeftovers are kube-router's chains and ipsets on the machine.
func netfilterLeftovers(ctx context.Context) []string {
	var left []string
	out, _ := exec.CommandContext(ctx, "iptables-save").Output()
	for line := range strings.SplitSeq(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, ":"); ok && strings.HasPrefix(name, "KUBE-") {
			left = append(left, "chain "+strings.Fields(name)[0])
		}
	}
	out, _ = exec.CommandContext(ctx, "ipset", "list", "-n").Output()
	for name := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "kube-router") {
			left = append(left, "ipset "+name)
		}
	}
	return left
}

// iptables runs iptables with args.
func iptables(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "iptables", args...).CombinedOutput() //nolint:gosec // Fixed arguments of the node's.
	return errors.Wrapf(err, "cannot run iptables %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
}
