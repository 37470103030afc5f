package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The node enforces NetworkPolicies with kube-router's firewall controller
// alone (no routing, no service proxy), as kube-router runs beside another
// CNI: it keeps iptables chains and ipsets for the pods bound to its Node,
// on the bridge's traffic (br_netfilter). It runs with
// --netpol-default-deny, so a pod's traffic is refused until its
// policies are in place, never let through early.
//
// kube-router names its chains and ipsets the same on every machine
// (KUBE-ROUTER-FORWARD, KUBE-POD-FW-..., kube-router-local-pods, ...), in
// the machine's own netfilter tables: two enforcing nodes on one machine
// would undo each other's rules. So a node holds a machine-wide lock while
// its enforcer runs, and a second node waits for it.

// ProcEnforcer names the enforcer's process and its log, enforcer.log.
const ProcEnforcer = "enforcer"

// netfilterLock is the machine-wide lock file, beside the subnet
// reservations.
func netfilterLock() string {
	return filepath.Join(os.TempDir(), "armada-node-subnets", "netfilter.lock")
}

// lockNetfilter takes the machine-wide lock, waiting while another node
// holds it, until ctx is done.
func lockNetfilter(ctx context.Context, logf func(string, ...any)) (*os.File, error) {
	p := netfilterLock()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create the netfilter lock's directory")
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // The node's own lock file.
	if err != nil {
		return nil, errors.Wrap(err, "cannot open the netfilter lock")
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, errors.Wrap(err, "cannot lock the netfilter lock")
		}
		if !waited {
			logf("waiting for another node on this machine to stop: it holds %s (kube-router's chains are machine-wide)", p)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, errors.Wrap(ctx.Err(), "cannot lock the netfilter lock")
		case <-time.After(time.Second):
		}
	}
}

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

// startEnforcer gives the Node its pod range (kube-router's default deny
// refuses traffic of the range's pods it has not programmed yet), starts
// kube-router's firewall controller under its own read-only identity and
// waits until its chains are in place.
func (n *Node) startEnforcer(ctx context.Context, cfg *rest.Config, b binaries) error {
	t := time.Now()
	l := n.l
	lock, err := lockNetfilter(ctx, n.logf)
	if err != nil {
		return err
	}
	n.netfilter = lock
	patch := []byte(`{"spec":{"podCIDR":"` + l.Subnet.String() + `","podCIDRs":["` + l.Subnet.String() + `"]}}`)
	if _, err := n.client.CoreV1().Nodes().Patch(ctx, l.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return errors.Wrapf(err, "cannot set the pod range of Node %s", l.Name)
	}
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
		"--netpol-default-deny=true",
		"--health-port=0",
		"--metrics-port=0",
		"--service-cluster-ip-range=" + serviceRange,
		"--v=2",
	}, nil)
	if err != nil {
		return err
	}
	n.enforcer = p
	err = p.waitFor(ctx, stepTimeout, "kube-router's chains", func(ctx context.Context) error {
		return iptables(ctx, "-S", "KUBE-ROUTER-FORWARD")
	})
	if err == nil {
		n.logf("node %s: kube-router enforcing NetworkPolicies in %s", l.Name, time.Since(t).Round(time.Millisecond))
	}
	return err
}

// serviceRange is the control plane's Service range
// (internal/harness/controlplane).
const serviceRange = "10.0.0.0/16"

// stopEnforcer stops kube-router, removes its chains and ipsets
// (kube-router --cleanup-config) and releases the machine-wide lock.
func (n *Node) stopEnforcer(ctx context.Context, b binaries) error {
	if n.netfilter == nil {
		return nil
	}
	var errs []error
	if n.enforcer != nil {
		errs = append(errs, n.enforcer.stop(10*time.Second))
	}
	if out, err := exec.CommandContext(ctx, b.KubeRouter, "--cleanup-config").CombinedOutput(); err != nil { //nolint:gosec // kube-router from the tool cache.
		errs = append(errs, errors.Wrapf(err, "cannot remove kube-router's chains: %s", lastLines(string(out), 5)))
	}
	if left := netfilterLeftovers(ctx); len(left) > 0 {
		errs = append(errs, errors.Errorf("kube-router --cleanup-config left %s", strings.Join(left, ", ")))
	}
	errs = append(errs, errors.Wrap(n.netfilter.Close(), "cannot release the netfilter lock"))
	n.netfilter = nil
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

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
