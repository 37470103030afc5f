// Package node runs a real Kubernetes node beside a local control plane
// (internal/harness/controlplane, started with Options.Workloads):
// containerd with runc, the CNI bridge, host-local and loopback plugins, a
// kubelet registered as a Node, kube-router enforcing NetworkPolicies
// (enforcer.go), and kube-proxy, CoreDNS and the API server's Service
// (services.go), so pods bound to it run as containers and reach
// Services by name. Images come from a registry in this process on a
// loopback port, which containerd's registry configuration maps every
// image name to, so pod specs name images as usual.
//
// Everything a node makes carries its run's id: its directory
// /tmp/armada-node-ID (containerd's root, state and sockets, the kubelet's
// root, pod logs, network namespaces and the containers' mounts), its
// Node, bridge (anbr-ID) and cgroup root (/armada-node-ID), and its pod
// range, a /24 of 198.18.0.0/16 reserved for it. Pods get no default
// route and no masquerade: they reach the host at the bridge's address,
// Services through it, and nothing beyond the machine. It holds the
// machine's network lock (internal/harness/netlock) while it runs. Stop
// removes all of it.
//
// It needs root, cgroups (v1 with the cgroupfs driver here; the kubelet is
// told failCgroupV1: false), iproute2, iptables, ipset, and the binaries
// make node-bins builds into the tool cache; Start fails, and never
// skips, if one is missing.
package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
	"github.com/armadaproject/armada-crossplane/internal/harness/netlock"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Pinned versions of the node's components; the wrapper modules under
// tools/ pin the same (TestPinsMatchToolModules). The kubelet is the
// control plane's Kubernetes version.
const (
	KubernetesVersion = "v1.37.2"
	ContainerdVersion = "v2.4.2"
	RuncVersion       = "v1.5.3"
	CNIPluginsVersion = "v1.10.0"
	KubeRouterVersion = "v2.10.0"
	CoreDNSVersion    = "v1.15.0"
)

// stepTimeout bounds each wait for a daemon or the Node to become ready.
const stepTimeout = 3 * time.Minute

// Options configure a Node.
type Options struct {
	// Config reaches the control plane's API server with rights to create
	// a ServiceAccount, a ClusterRoleBinding and tokens (the admin's).
	Config *rest.Config
	// BinDir holds the cached tool binaries; empty means the tool cache
	// (testutil.ToolDir).
	BinDir string
	// Images are pushed to the node's registry besides the pause and job
	// images.
	Images []Image
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
	// HostNames resolve, in the cluster's DNS, to the host's address (the
	// bridge's), as a cluster's DNS resolves a name outside the cluster:
	// for a service on the host that pods reach by a name that is not a
	// Service's (an OpenID Provider's issuer; Relay carries its port).
	HostNames []string
}

// A Node is a running node. Create one with Start and stop it with Stop.
type Node struct {
	l        layout
	client   kubernetes.Interface
	registry *Registry
	release  func()

	bins                                 binaries
	containerd, kubelet, enforcer, proxy *process
	// relays carry the node's pods' connections to the API server and
	// to the host's services (Relay).
	relays []net.Listener
	// unlock releases the machine's network lock, held from before the
	// bridge is made until everything is removed.
	unlock        func() error
	logf          func(string, ...any)
	hostNames     []string
	keep, stopped bool
}

// Start starts a node, waiting until its Node is Ready. On failure it
// removes what it made.
func Start(ctx context.Context, o Options) (*Node, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	b, err := resolveBinaries(o.BinDir)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a client for the control plane")
	}
	sweep(ctx, o.Logf)
	id, dir, err := newRunDir()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, errors.Wrap(err, "cannot write the node's owner file")
	}
	subnet, release, err := reserveSubnet()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, subnetFile), []byte(subnet.String()), 0o600); err != nil {
		release()
		_ = os.RemoveAll(dir)
		return nil, errors.Wrap(err, "cannot write the node's pod range")
	}
	unlock, err := netlock.Exclusive(ctx, o.Logf)
	if err != nil {
		release()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	n := &Node{
		l: newLayout(id, dir, subnet), client: cs, release: release, logf: o.Logf, bins: b, unlock: unlock,
		hostNames: slices.Sorted(slices.Values(o.HostNames)),
	}
	if err := n.start(ctx, o, b); err != nil {
		if serr := n.Stop(); serr != nil { //nolint:contextcheck // Stop must run to the end even when ctx is done.
			return nil, errors.Join(err, serr)
		}
		return nil, err
	}
	return n, nil
}

// resolveBinaries finds the node's binaries in the tool cache.
func resolveBinaries(binDir string) (binaries, error) {
	if binDir == "" {
		d, err := testutil.ToolDir("")
		if err != nil {
			return binaries{}, err
		}
		binDir = d
	}
	b := binaries{
		Containerd: filepath.Join(binDir, "containerd-"+ContainerdVersion, "containerd"),
		Shim:       filepath.Join(binDir, "containerd-"+ContainerdVersion, "containerd-shim-runc-v2"),
		Runc:       filepath.Join(binDir, "runc-"+RuncVersion),
		Kubelet:    filepath.Join(binDir, "kubernetes-"+KubernetesVersion, "kubelet"),
		CNIDir:     filepath.Join(binDir, "cni-plugins-"+CNIPluginsVersion),
		KubeRouter: filepath.Join(binDir, "kube-router-"+KubeRouterVersion),
		KubeProxy:  filepath.Join(binDir, "kubernetes-"+KubernetesVersion, "kube-proxy"),
		CoreDNS:    filepath.Join(binDir, "coredns-"+CoreDNSVersion),
	}
	need := []string{b.Containerd, b.Shim, b.Runc, b.Kubelet, b.KubeRouter, b.KubeProxy, b.CoreDNS}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		need = append(need, filepath.Join(b.CNIDir, p))
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return binaries{}, errors.Wrapf(err, "cannot find %s: run make node-bins", p)
		}
	}
	return b, nil
}

func (n *Node) start(ctx context.Context, o Options, b binaries) error {
	l := n.l
	ports, err := freeport.Reserve(ctx, 3)
	if err != nil {
		return errors.Wrap(err, "cannot reserve ports")
	}
	t := time.Now()
	if n.registry, err = startRegistry(ctx, ports[0]); err != nil {
		return err
	}
	imgs, err := testImages(ctx, l.path("build"))
	if err != nil {
		return err
	}
	dns, err := coreDNSImage(b.CoreDNS)
	if err != nil {
		return err
	}
	imgs = append(imgs, dns)
	for _, im := range append(imgs, o.Images...) {
		if err := n.registry.Push(ctx, im); err != nil {
			return err
		}
	}
	n.logf("node %s: %d images in its registry at %s in %s", l.Name, len(imgs)+len(o.Images), n.registry.Addr(), time.Since(t).Round(time.Millisecond))

	ca := o.Config.CAData
	if len(ca) == 0 && o.Config.CAFile != "" {
		if ca, err = os.ReadFile(o.Config.CAFile); err != nil {
			return errors.Wrap(err, "cannot read the control plane's CA")
		}
	}
	if err := n.writeConfigs(b, ports[1:], ca); err != nil {
		return err
	}
	if err := createBridge(ctx, l); err != nil {
		return err
	}
	if err := createCgroupRoot(l.CgroupRoot); err != nil {
		return err
	}
	if err := n.startContainerd(ctx, b); err != nil {
		return err
	}
	// The kubelet's own identity: a ServiceAccount named like the Node,
	// bound to system:node.
	if err := n.writeIdentity(ctx, o.Config, identity{Name: l.Name, ClusterRole: "system:node", Kubeconfig: l.path("kubelet.kubeconfig")}); err != nil {
		return err
	}
	if err := n.startKubelet(ctx, b); err != nil {
		return err
	}
	// kube-proxy and the guard rules go in before kube-router starts:
	// kube-router rewrites the whole filter table (iptables-restore
	// without --noflush) from a copy it read at the start of each sync, so
	// a chain or rule another writer adds meanwhile is lost. kube-proxy's
	// first sync once failed so ("Chain 'KUBE-EXTERNAL-SERVICES' does not
	// exist") and its nat chains never came. Started after, kube-router
	// reads them and keeps them.
	if err := n.startServices(ctx, o.Config, b); err != nil {
		return err
	}
	return n.startEnforcer(ctx, o.Config, b)
}

// writeConfigs writes containerd's, the registry mapping's, the CNI
// network's and the kubelet's configuration, and the CA whose client
// certificates the kubelet accepts (the control plane's, ca).
func (n *Node) writeConfigs(b binaries, ports []int, ca []byte) error {
	l := n.l
	cni, err := cniConfig(l)
	if err != nil {
		return err
	}
	kc, err := kubeletConfig(l, kubeletPorts{Server: ports[0], Healthz: ports[1]})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		l.path("containerd", "config.toml"):                          []byte(containerdConfig(l, b, PauseImage, !hasCapability(capSysResource))),
		filepath.Join(l.registryConfDir(), "_default", "hosts.toml"): []byte(registryHosts(n.registry.Addr())),
		filepath.Join(l.cniConfDir(), "10-"+l.Name+".conflist"):      cni,
		l.path("kubelet-config.yaml"):                                kc,
		l.path(kubeletClientCA):                                      ca,
		l.path("resolv.conf"):                                        []byte("# No nameserver: the node's pods reach nothing beyond the machine.\n"),
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return errors.Wrapf(err, "cannot create %s", filepath.Dir(p))
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return errors.Wrapf(err, "cannot write %s", p)
		}
	}
	return nil
}

// startContainerd starts containerd and waits until its socket answers.
// The shim is found on PATH, so its directory comes first there.
func (n *Node) startContainerd(ctx context.Context, b binaries) error {
	t := time.Now()
	env := []string{"PATH=" + filepath.Dir(b.Shim) + ":" + os.Getenv("PATH")}
	p, err := startProcess(ProcContainerd, b.Containerd, n.l.path(ProcContainerd+".log"),
		[]string{"--config", n.l.path("containerd", "config.toml")}, env)
	if err != nil {
		return err
	}
	n.containerd = p
	err = p.waitFor(ctx, "containerd's socket", func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", n.l.containerdSocket())
		if err != nil {
			return errors.Wrap(err, "cannot dial containerd")
		}
		return c.Close()
	})
	if err == nil {
		n.logf("node %s: containerd ready in %s", n.l.Name, time.Since(t).Round(time.Millisecond))
	}
	return err
}

// tokenSeconds is how long the kubelet's token is valid.
const tokenSeconds = 24 * 60 * 60

// An identity is a ServiceAccount in kube-system bound to a ClusterRole
// (the control plane authorizes with RBAC only), written as a kubeconfig
// with a token for it.
type identity struct {
	Name, ClusterRole, Kubeconfig string
}

// writeIdentity creates id's ServiceAccount and ClusterRoleBinding, both
// named id.Name, and writes its kubeconfig.
func (n *Node) writeIdentity(ctx context.Context, cfg *rest.Config, id identity) error {
	name := id.Name
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}}
	if _, err := n.client.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return errors.Wrapf(err, "cannot create ServiceAccount %s/%s", sa.Namespace, name)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id.ClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: sa.Namespace}},
	}
	if _, err := n.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return errors.Wrapf(err, "cannot create ClusterRoleBinding %s", name)
	}
	tr, err := n.client.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenSeconds)}}, metav1.CreateOptions{})
	if err != nil {
		return errors.Wrapf(err, "cannot request a token for ServiceAccount %s/%s", sa.Namespace, name)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return errors.Wrapf(err, "cannot serialize the kubeconfig of %s", name)
	}
	return errors.Wrapf(os.WriteFile(id.Kubeconfig, data, 0o600), "cannot write the kubeconfig of %s", name)
}

// startKubelet starts the kubelet and waits until its Node is Ready.
func (n *Node) startKubelet(ctx context.Context, b binaries) error {
	t := time.Now()
	l := n.l
	p, err := startProcess(ProcKubelet, b.Kubelet, l.path(ProcKubelet+".log"), []string{
		"--config=" + l.path("kubelet-config.yaml"),
		"--kubeconfig=" + l.path("kubelet.kubeconfig"),
		"--hostname-override=" + l.Name,
		"--node-ip=" + l.gateway().String(),
		"--root-dir=" + l.kubeletDir(),
		"--cert-dir=" + l.path("kubelet-pki"),
		"--v=2",
	}, nil)
	if err != nil {
		return err
	}
	n.kubelet = p
	err = p.waitFor(ctx, "Node "+l.Name+" Ready", func(ctx context.Context) error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot get Node %s", l.Name)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return errors.Errorf("Node %s is not Ready: %s: %s", l.Name, c.Reason, c.Message)
			}
		}
		return errors.Errorf("Node %s reports no Ready condition", l.Name)
	})
	if err == nil {
		n.logf("node %s: kubelet registered, Node Ready in %s", l.Name, time.Since(t).Round(time.Millisecond))
	}
	return err
}

// Name is the Node's name.
func (n *Node) Name() string { return n.l.Name }

// Dir is the node's directory.
func (n *Node) Dir() string { return n.l.Dir }

// HostAddress is the bridge's address: where pods reach the host.
func (n *Node) HostAddress() string { return n.l.gateway().String() }

// Registry is the node's image registry.
func (n *Node) Registry() *Registry { return n.registry }

// PodLogs returns the logs the kubelet wrote for container of pod
// name in ns, every attempt in order ("" if there are none yet). They are
// read from the node's pod log directory: the kubelet serves no logs to
// the API server here.
func (n *Node) PodLogs(ns, name, container string) string {
	files, _ := filepath.Glob(filepath.Join(n.l.path("pod-logs"), ns+"_"+name+"_*", container, "*.log"))
	sort.Slice(files, func(i, j int) bool { return attempt(files[i]) < attempt(files[j]) })
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f) //nolint:gosec // A log file under the node's directory.
		b.Write(data)
	}
	return b.String()
}

// Memory is the resident memory of containerd, its shims, the kubelet and
// the NetworkPolicy enforcer, as
// "containerd 40 MiB, shims 30 MiB (3), kubelet 60 MiB, kube-router 50 MiB".
func (n *Node) Memory() string {
	rss := func(pid int) int64 {
		b, err := os.ReadFile(filepath.Join(procFS, strconv.Itoa(pid), "status"))
		if err != nil {
			return 0
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10
			}
		}
		return 0
	}
	daemons := []*process{n.containerd, n.kubelet, n.enforcer, n.proxy}
	own := make([]int64, len(daemons))
	var sum, all int64
	running := 0
	for i, p := range daemons {
		if p != nil {
			own[i] = rss(p.cmd.Process.Pid)
			sum += own[i]
			running++
		}
	}
	pids := pidsMentioning(n.l.Dir)
	for _, pid := range pids {
		all += rss(pid)
	}
	var dns int64
	for _, pid := range n.containerPIDs("coredns") {
		dns += rss(pid)
	}
	const mib = 1 << 20
	return fmt.Sprintf("containerd %d MiB, shims %d MiB (%d), kubelet %d MiB, kube-router %d MiB, kube-proxy %d MiB, CoreDNS %d MiB",
		own[0]/mib, (all-sum)/mib, len(pids)-running, own[1]/mib, own[2]/mib, own[3]/mib, dns/mib)
}

// containerPIDs are the processes named comm that run in the node's
// containers (in its cgroup root).
func (n *Node) containerPIDs(comm string) []int {
	return pidsWhere(func(dir string) bool {
		c, err := os.ReadFile(filepath.Join(dir, "comm")) //nolint:gosec // A /proc file.
		if err != nil || strings.TrimSpace(string(c)) != comm {
			return false
		}
		cg, err := os.ReadFile(filepath.Join(dir, "cgroup")) //nolint:gosec // A /proc file.
		return err == nil && strings.Contains(string(cg), ":"+n.l.CgroupRoot+"/")
	})
}

// attempt is the restart count a container log file is named by (N.log).
func attempt(file string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(file), ".log"))
	return n
}

// Keep makes Stop leave the node's directory (logs, configuration) in
// place; everything else is still removed.
func (n *Node) Keep() { n.keep = true }

// LogTails returns the last n lines of containerd's and the kubelet's
// logs.
func (n *Node) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range []*process{n.containerd, n.kubelet, n.enforcer, n.proxy} {
		if p != nil {
			b.WriteString("=== " + p.name + " (" + p.logPath + ")\n" + p.tail(lines) + "\n")
		}
	}
	return b.String()
}

// Stop stops the node and removes everything it made: the kubelet, the
// containers (every process in its cgroups), containerd and its shims,
// the mounts under its directory (containers' root filesystems, network
// namespaces, volumes), the bridge and the veths on it, the cgroups, its
// Node, ServiceAccount and ClusterRoleBinding, the registry, the pod range
// reservation and the directory.
func (n *Node) Stop() error {
	if n.stopped {
		return nil
	}
	n.stopped = true
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	add(n.kubelet.stop())
	// Both daemons that write netfilter rules stop before either's
	// cleanup, which would otherwise race the other's writes.
	add(n.proxy.stop())
	add(n.enforcer.stop())
	add(n.stopServices(ctx, n.bins))
	add(n.stopEnforcer(ctx, n.bins))
	add(killCgroups(n.l.CgroupRoot))
	add(n.containerd.stop())
	killMentioning(n.l.Dir)
	add(unmountUnder(n.l.Dir))
	add(deleteBridge(ctx, n.l))
	add(killCgroups(n.l.CgroupRoot))
	add(n.deleteAPIObjects(ctx))
	add(n.registry.stop())
	n.release()
	add(n.unlock())
	switch {
	case len(errs) > 0:
		// The owner file stays: the next Start's sweep retries.
	case n.keep:
		// Kept for its logs; nothing else of the node is left to sweep.
		add(errors.Wrap(os.Remove(filepath.Join(n.l.Dir, ownerFile)), "cannot remove the node's owner file"))
	default:
		add(errors.Wrap(os.RemoveAll(n.l.Dir), "cannot remove the node's directory"))
	}
	return errors.Join(errs...)
}

// deleteAPIObjects deletes the Node and the kubelet's identity.
func (n *Node) deleteAPIObjects(ctx context.Context) error {
	ignore := func(err error) error {
		if kerrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	name := n.l.Name
	errs := make([]error, 0, 6)
	errs = append(errs, errors.Wrapf(ignore(n.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})), "cannot delete Node %s", name))
	for _, id := range []string{name, n.l.enforcerName()} {
		errs = append(errs,
			errors.Wrapf(ignore(n.client.RbacV1().ClusterRoleBindings().Delete(ctx, id, metav1.DeleteOptions{})), "cannot delete ClusterRoleBinding %s", id),
			errors.Wrapf(ignore(n.client.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Delete(ctx, id, metav1.DeleteOptions{})),
				"cannot delete ServiceAccount %s", id))
	}
	errs = append(errs, errors.Wrapf(ignore(n.client.RbacV1().ClusterRoles().Delete(ctx, n.l.enforcerName(), metav1.DeleteOptions{})),
		"cannot delete ClusterRole %s", n.l.enforcerName()), n.deleteServiceObjects(ctx))
	return errors.Join(errs...)
}

// ContainerOutput is what a container of pod ns/name wrote, every
// attempt's, without the CRI log format's prefixes (time, stream, tag).
func (n *Node) ContainerOutput(ns, name, container string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(n.PodLogs(ns, name, container), "\n") {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			b.WriteString(f[3] + "\n")
		}
	}
	return b.String()
}
