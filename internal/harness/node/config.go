package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// layout is where one node keeps everything it makes, and the names it
// gives what lives outside its directory: all derive from the run's id,
// so two nodes on one machine never collide.
type layout struct {
	// ID is the run's random suffix; Name ("armada-node-ID") is the Node's
	// name, the CNI network's and the cgroup root's.
	ID, Name string
	// Dir holds every file, socket and mount the node makes. It is short
	// (under /tmp): containerd's shim sockets live under it and a unix
	// socket's path is limited to 108 bytes.
	Dir string
	// Bridge is the Linux bridge the pods attach to (at most 15 bytes).
	Bridge string
	// CgroupRoot is the kubelet's cgroup root, in every v1 hierarchy.
	CgroupRoot string
	// Subnet is the pod range, a /24 inside 198.18.0.0/16; its first
	// address is the bridge's own.
	Subnet netip.Prefix
}

// newLayout derives a node's names from its id, its directory and its
// pod range.
func newLayout(id, dir string, subnet netip.Prefix) layout {
	name := namePrefix + id
	return layout{
		ID: id, Name: name, Dir: dir,
		Bridge:     "anbr-" + id,
		CgroupRoot: "/" + name,
		Subnet:     subnet,
	}
}

// namePrefix starts every name a node gives what it makes outside its
// directory (the Node, the cgroup root, the directory itself), so leftovers
// of a run that died can be told apart from anything else.
const namePrefix = "armada-node-"

// Paths under the node's directory.
func (l layout) path(elem ...string) string {
	return strings.Join(append([]string{l.Dir}, elem...), "/")
}

func (l layout) containerdSocket() string { return l.path("containerd", "containerd.sock") }
func (l layout) cniConfDir() string       { return l.path("cni", "net.d") }
func (l layout) registryConfDir() string  { return l.path("containerd", "certs.d") }
func (l layout) kubeletDir() string       { return l.path("kubelet") }

// gateway is the bridge's address: the first of the pod range. Pods reach
// the host, and services on it, there.
func (l layout) gateway() netip.Addr { return l.Subnet.Addr().Next() }

// binaries are the node's executables.
type binaries struct {
	Containerd, Shim, Runc, Kubelet string
	// KubeRouter enforces NetworkPolicies (its firewall controller);
	// KubeProxy translates Services; CoreDNS is the cluster DNS's binary.
	KubeRouter, KubeProxy, CoreDNS string
	// CNIDir holds the bridge, host-local, loopback and portmap plugins.
	CNIDir string
}

// containerdConfig is containerd's config.toml (version 3, containerd
// 2.x): its root, state, sockets, the shims' sockets, the CNI network
// and the network namespaces all under the node's directory; runc from
// the tool cache with the cgroupfs driver; images pulled through the
// registry configuration in registryConfDir, and pauseImage as the
// sandbox image. The plugins that would touch paths outside the
// directory (NRI's socket, /opt) are disabled. restrictOOM keeps the
// containers' oom_score_adj from going below containerd's own: without
// CAP_SYS_RESOURCE (root on these machines lacks it) runc cannot lower it
// to the kubelet's -998 for a sandbox, and fails with "failed to update
// /proc/self/oom_score_adj: Permission denied".
func containerdConfig(l layout, b binaries, pauseImage string, restrictOOM bool) string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 3
root = %s
state = %s
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins."io.containerd.shim.v1.manager"]
  socket_dir = %s

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %s

  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %s

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = false
  restrict_oom_score_adj = %t

  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%s]
    conf_dir = %s

  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = %s
        SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`,
		q(l.path("containerd", "root")), q(l.path("containerd", "state")),
		q(l.containerdSocket()), q(l.path("containerd", "containerd.sock.ttrpc")),
		q(l.path("s")),
		q(pauseImage), q(l.registryConfDir()),
		restrictOOM, q(b.CNIDir), q(l.cniConfDir()),
		q(b.Runc))
}

// registryHosts is the hosts.toml containerd reads for every registry
// (certs.d/_default): each image name, docker.io/... or registry.k8s.io/...,
// is pulled from the loopback registry at addr over plain HTTP, and from
// nowhere else.
func registryHosts(addr string) string {
	url := strconv.Quote("http://" + addr)
	return fmt.Sprintf(`server = %s

[host.%s]
  capabilities = ["pull", "resolve"]
`, url, url)
}

// cniConfig is the pod network: one bridge unique to the node, addresses
// from the node's /24 by host-local (its state under the node's
// directory). The bridge is not the pods' gateway: no default route, no
// masquerade and no IP forwarding, so traffic from a pod reaches the
// host's bridge address and other pods on the bridge, and nothing beyond
// the machine.
func cniConfig(l layout) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       l.Name,
		"plugins": []any{map[string]any{
			"type":             "bridge",
			"bridge":           l.Bridge,
			"isGateway":        false,
			"isDefaultGateway": false,
			"ipMasq":           false,
			"hairpinMode":      true,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": l.path("cni", "ipam"),
				"ranges": []any{[]any{map[string]any{
					"subnet":     l.Subnet.String(),
					"rangeStart": l.gateway().Next().String(),
				}}},
				// Services through the host, where kube-proxy translates
				// them; no default route.
				"routes": []any{map[string]any{"dst": controlplane.ServiceRange, "gw": l.gateway().String()}},
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return b, errors.Wrap(err, "cannot encode the CNI configuration")
}

// kubeletClientCA is the file of the CA whose client certificates the
// kubelet accepts: the control plane's.
const kubeletClientCA = "kubelet-client-ca.crt"

// kubeletPorts are the kubelet's ports: its server's, on the bridge's
// address, and its health check's, on loopback.
type kubeletPorts struct{ Server, Healthz int }

// kubeletConfig is the kubelet's KubeletConfiguration: cgroup v1 allowed
// (failCgroupV1: false) with the cgroupfs driver under the node's own
// cgroup root, containerd's socket, the node's directories for pod logs
// and volume plugins, its server on the bridge's address (the Node's
// InternalIP) for the API server only (clients with a certificate of the
// control plane's CA; no anonymous access), its health check on loopback,
// and eviction thresholds low enough that a busy shared disk does not
// evict the tests' pods.
func kubeletConfig(l layout, p kubeletPorts) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"address":                  l.gateway().String(),
		"port":                     p.Server,
		"readOnlyPort":             0,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              p.Healthz,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               l.CgroupRoot,
		"failCgroupV1":             false,
		"failSwapOn":               false,
		"containerRuntimeEndpoint": "unix://" + l.containerdSocket(),
		"podLogsDir":               l.path("pod-logs"),
		"volumePluginDir":          l.path("volume-plugins"),
		"resolvConf":               l.path("resolv.conf"),
		"clusterDNS":               []string{ClusterDNS},
		"clusterDomain":            ClusterDomain,
		"makeIPTablesUtilChains":   false,
		"serializeImagePulls":      false,
		"registerNode":             true,
		"syncFrequency":            "10s",
		"fileCheckFrequency":       "10s",
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": l.path(kubeletClientCA)},
		},
		"authorization": map[string]any{"mode": "AlwaysAllow"},
		"evictionHard": map[string]any{
			"memory.available":  "100Mi",
			"nodefs.available":  "1%",
			"nodefs.inodesFree": "1%",
			"imagefs.available": "1%",
		},
		"mergeDefaultEvictionSettings": false,
	}
	b, err := yaml.Marshal(cfg)
	return b, errors.Wrap(err, "cannot encode the kubelet configuration")
}

// The cluster DNS the node runs: CoreDNS behind the kube-dns Service at a
// fixed address of the Service range, for the cluster's domain.
const (
	ClusterDNS    = "198.19.0.10"
	ClusterDomain = "cluster.local"
)

// proxyPorts are kube-proxy's loopback ports.
type proxyPorts struct{ Healthz, Metrics int }

// kubeProxyConfig is kube-proxy's KubeProxyConfiguration: iptables mode
// for the node's pod range (traffic from it is local), NodePorts only on
// the bridge's address, servers on loopback, and no machine-wide sysctl
// changed (conntrack sizes and timeouts left as they are, no
// route_localnet).
func kubeProxyConfig(l layout, kubeconfig string, p proxyPorts) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"hostnameOverride":   l.Name,
		"mode":               "iptables",
		"clusterCIDR":        l.Subnet.String(),
		"detectLocalMode":    "ClusterCIDR",
		"bindAddress":        l.gateway().String(),
		"healthzBindAddress": "127.0.0.1:" + strconv.Itoa(p.Healthz),
		"metricsBindAddress": "127.0.0.1:" + strconv.Itoa(p.Metrics),
		"nodePortAddresses":  []string{netip.PrefixFrom(l.gateway(), 32).String()},
		"iptables":           map[string]any{"localhostNodePorts": false},
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	}
	b, err := yaml.Marshal(cfg)
	return b, errors.Wrap(err, "cannot encode kube-proxy's configuration")
}

// corefile is CoreDNS's configuration: the cluster's names from the API
// server, hostNames at the host's address hostAddr, readiness on 8181,
// and nothing forwarded beyond the machine.
func corefile(hostAddr string, hostNames []string) string {
	hosts := ""
	if len(hostNames) > 0 {
		hosts = "    hosts {\n        " + hostAddr + " " + strings.Join(hostNames, " ") + "\n        fallthrough\n    }\n"
	}
	return `.:53 {
    errors
    ready :8181
` + hosts + `    kubernetes ` + ClusterDomain + ` in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`
}
