package node

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"
)

var testLayout = newLayout("abc123", "/tmp/armada-node-abc123", netip.MustParsePrefix("198.18.7.0/24"))

func TestNewLayout(t *testing.T) {
	want := layout{
		ID: "abc123", Name: "armada-node-abc123", Dir: "/tmp/armada-node-abc123",
		Bridge: "anbr-abc123", CgroupRoot: "/armada-node-abc123",
		Subnet: netip.MustParsePrefix("198.18.7.0/24"),
	}
	if diff := cmp.Diff(want, testLayout, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("newLayout (-want +got):\n%s", diff)
	}
	// A Linux interface name has at most 15 bytes.
	if len(testLayout.Bridge) > 15 {
		t.Errorf("bridge name %q is longer than 15 bytes", testLayout.Bridge)
	}
	if got := testLayout.gateway().String(); got != "198.18.7.1" {
		t.Errorf("gateway %s, want 198.18.7.1", got)
	}
}

func TestCNIConfig(t *testing.T) {
	b, err := cniConfig(testLayout)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// No gateway role for the bridge (no default route in the pods), no
	// masquerade: nothing leaves the machine. The one route is the Service
	// range's, through the bridge's address, where kube-proxy translates.
	want := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "armada-node-abc123",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": "anbr-abc123",
			"isGateway": false, "isDefaultGateway": false, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": "/tmp/armada-node-abc123/cni/ipam",
				"ranges":  []any{[]any{map[string]any{"subnet": "198.18.7.0/24", "rangeStart": "198.18.7.2"}}},
				"routes":  []any{map[string]any{"dst": "198.19.0.0/16", "gw": "198.18.7.1"}},
			},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cniConfig (-want +got):\n%s", diff)
	}
}

func TestContainerdConfig(t *testing.T) {
	b := binaries{Runc: "/cache/runc-v1.5.3", CNIDir: "/cache/cni-plugins-v1.10.0"}
	type picked struct {
		Root, State, Socket, ShimSockets, Sandbox, Registry, Runc string
		RestrictOOM, NetnsUnderState, SystemdCgroup               bool
		CNIBin                                                    []string
		CNIConf                                                   string
	}
	cases := map[string]struct {
		reason      string
		restrictOOM bool
		want        picked
	}{
		"WithoutCapSysResource": {
			reason:      "Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj, so containerd must not ask it to.",
			restrictOOM: true,
		},
		"WithCapSysResource": {
			reason: "With CAP_SYS_RESOURCE the kubelet's oom_score_adj is applied as asked.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var cfg map[string]any
			if err := toml.Unmarshal([]byte(containerdConfig(testLayout, b, PauseImage, tc.restrictOOM)), &cfg); err != nil {
				t.Fatalf("containerdConfig is not TOML: %v", err)
			}
			plugin := func(id string) map[string]any { return cfg["plugins"].(map[string]any)[id].(map[string]any) }
			rt := plugin("io.containerd.cri.v1.runtime")
			runc := rt["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"].(map[string]any)["options"].(map[string]any)
			img := plugin("io.containerd.cri.v1.images")
			dirs := rt["cni"].(map[string]any)["bin_dirs"].([]any)
			bins := make([]string, 0, len(dirs))
			for _, d := range dirs {
				bins = append(bins, d.(string))
			}
			got := picked{
				Root: cfg["root"].(string), State: cfg["state"].(string),
				Socket:          cfg["grpc"].(map[string]any)["address"].(string),
				ShimSockets:     plugin("io.containerd.shim.v1.manager")["socket_dir"].(string),
				Sandbox:         img["pinned_images"].(map[string]any)["sandbox"].(string),
				Registry:        img["registry"].(map[string]any)["config_path"].(string),
				Runc:            runc["BinaryName"].(string),
				SystemdCgroup:   runc["SystemdCgroup"].(bool),
				RestrictOOM:     rt["restrict_oom_score_adj"].(bool),
				NetnsUnderState: rt["netns_mounts_under_state_dir"].(bool),
				CNIBin:          bins,
				CNIConf:         rt["cni"].(map[string]any)["conf_dir"].(string),
			}
			want := picked{
				Root: "/tmp/armada-node-abc123/containerd/root", State: "/tmp/armada-node-abc123/containerd/state",
				Socket:          "/tmp/armada-node-abc123/containerd/containerd.sock",
				ShimSockets:     "/tmp/armada-node-abc123/s",
				Sandbox:         PauseImage,
				Registry:        "/tmp/armada-node-abc123/containerd/certs.d",
				Runc:            "/cache/runc-v1.5.3",
				RestrictOOM:     tc.restrictOOM,
				NetnsUnderState: true,
				CNIBin:          []string{"/cache/cni-plugins-v1.10.0"},
				CNIConf:         "/tmp/armada-node-abc123/cni/net.d",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\ncontainerdConfig (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestKubeletConfig(t *testing.T) {
	b, err := kubeletConfig(testLayout, kubeletPorts{Server: 21000, Healthz: 21001})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// The settings cgroup v1 and a private node need: the kubelet's
	// server on the bridge's address only, for the API server's
	// certificate.
	want := map[string]any{
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               "/armada-node-abc123",
		"containerRuntimeEndpoint": "unix:///tmp/armada-node-abc123/containerd/containerd.sock",
		"address":                  "198.18.7.1",
		"healthzBindAddress":       "127.0.0.1",
		"port":                     float64(21000),
		"healthzPort":              float64(21001),
		"readOnlyPort":             float64(0),
		"podLogsDir":               "/tmp/armada-node-abc123/pod-logs",
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": "/tmp/armada-node-abc123/kubelet-client-ca.crt"},
		},
	}
	picked := map[string]any{}
	for k := range want {
		picked[k] = got[k]
	}
	if diff := cmp.Diff(want, picked); diff != "" {
		t.Errorf("kubeletConfig (-want +got):\n%s", diff)
	}
}

func TestClaim(t *testing.T) {
	dead := exec.CommandContext(t.Context(), "true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		holder string // "" for no file
		want   bool
	}{
		"Free":    {reason: "A range no one reserved is claimed.", want: true},
		"Held":    {reason: "A range a live process holds is not.", holder: strconv.Itoa(os.Getppid())},
		"Orphan":  {reason: "A range whose holder died is taken over.", holder: strconv.Itoa(dead.Process.Pid), want: true},
		"Garbled": {reason: "A reservation that holds no pid is taken over.", holder: "?", want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "198.18.0.0")
			if tc.holder != "" {
				if err := os.WriteFile(file, []byte(tc.holder), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := claim(file); got != tc.want {
				t.Errorf("%s\nclaim: got %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

func TestUnescapeMount(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"Plain": {in: "/tmp/a/b", want: "/tmp/a/b"},
		"Space": {in: `/tmp/a\040b`, want: "/tmp/a b"},
		"Tail":  {in: `/tmp/a\04`, want: `/tmp/a\04`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unescapeMount(tc.in)); diff != "" {
				t.Errorf("unescapeMount(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestPinsMatchToolModules: the versions the node looks for in the tool
// cache are the ones the wrapper modules under tools/ build.
func TestPinsMatchToolModules(t *testing.T) {
	cases := map[string]struct{ got, dir, module string }{
		"KubernetesVersion": {got: KubernetesVersion, dir: "tools/kubernetes", module: "k8s.io/kubernetes"},
		"ContainerdVersion": {got: ContainerdVersion, dir: "tools/containerd", module: "github.com/containerd/containerd/v2"},
		"RuncVersion":       {got: RuncVersion, dir: "tools/runc", module: "github.com/opencontainers/runc"},
		"CNIPluginsVersion": {got: CNIPluginsVersion, dir: "tools/cni", module: "github.com/containernetworking/plugins"},
		"KubeRouterVersion": {got: KubeRouterVersion, dir: "tools/kube-router", module: "github.com/cloudnativelabs/kube-router/v2"},
		"CoreDNSVersion":    {got: CoreDNSVersion, dir: "tools/coredns", module: "github.com/coredns/coredns"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "..", tc.dir, "go.mod")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := modfile.Parse(path, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, r := range f.Require {
				if r.Mod.Path == tc.module {
					want = r.Mod.Version
				}
			}
			if diff := cmp.Diff(want, tc.got); diff != "" {
				t.Errorf("%s names %s, %s/go.mod pins %s (-want +got):\n%s", name, tc.got, tc.dir, want, diff)
			}
		})
	}
}

func TestNthSubnet(t *testing.T) {
	cases := map[string]struct {
		i    int
		want string
	}{
		"First":          {i: 0, want: "198.18.0.0/24"},
		"Last":           {i: 255, want: "198.18.255.0/24"},
		"WrapsInsideNet": {i: 256, want: "198.18.0.0/24"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := nthSubnet(tc.i)
			if diff := cmp.Diff(tc.want, got.String()); diff != "" {
				t.Errorf("nthSubnet(%d) (-want +got):\n%s", tc.i, diff)
			}
			if !podNetwork.Contains(got.Addr()) {
				t.Errorf("nthSubnet(%d) = %s is outside %s", tc.i, got, podNetwork)
			}
		})
	}
}
