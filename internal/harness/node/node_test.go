package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// podTimeout bounds each wait for a pod on the node.
const podTimeout = 3 * time.Minute

// warnings records the API server's warnings (Pod Security's among them).
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// TestRealNode runs pods as containers on a real node (containerd, runc,
// the CNI bridge and a kubelet) in a namespace where Pod Security
// "restricted" is enforced: a job whose container checks, from inside, its
// read-only root filesystem, its uid and the files of a Secret volume
// (with items, and one item again through subPath) and a projected
// ServiceAccount token, serves a readiness
// endpoint the kubelet probes on the pod's own address, and exits with a
// chosen code the kubelet reports; and a pod Pod Security admits but the
// kubelet refuses to start (runAsNonRoot with an image that runs as root).
// Stopping the node leaves nothing behind.
func TestRealNode(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{KubernetesOnly: true, SkipProviderKubernetes: true, Workloads: true})
	src, err := ArmadaSourcesFor(t.Context(), armada.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ArmadaImage(src, ArmadaComponents[0])
	if err != nil {
		t.Fatal(err)
	}
	n := StartForTest(t, Options{Config: cp.RESTConfig(), Images: []Image{server}, HostNames: []string{hostName}})

	w := &warnings{}
	cfg := cp.RESTConfig()
	cfg.WarningHandlerWithContext = w
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const ns = "restricted"
	restrictedNamespace(ctx, t, cs, ns)
	mustCreate(t, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "job"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "creds"},
			Data:       map[string][]byte{"username": []byte("armada"), "password": []byte("not-mounted")},
		}, metav1.CreateOptions{})
		return err
	})

	t.Run("PrivilegedPodRefusedByPodSecurity", func(t *testing.T) {
		p := jobPod("privileged", n.Name(), nil)
		p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
			t.Fatalf("want Pod Security to refuse a privileged pod, got %v", err)
		}
	})

	t.Run("JobRunsAsContainer", func(t *testing.T) {
		p := jobPod("job", n.Name(), []string{
			"-expect-file=/etc/creds/user", "-expect-file=/etc/single/user", "-expect-file=/var/run/token/token",
			"-expect-readonly-root", "-expect-uid=1000", "-listen=:8080", "-sleep=15s", "-exit=7",
		})
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("cannot create pod: %v", err)
		}
		if got := w.take(); len(got) > 0 {
			t.Errorf("creating the pod gave warnings: %q", got)
		}
		// Ready only by the kubelet's probe of the pod's own address.
		ready := waitPod(ctx, t, cs, ns, p.Name, "Ready", func(p *corev1.Pod) bool {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true
				}
			}
			return false
		})
		if !n.l.Subnet.Contains(mustAddr(t, ready.Status.PodIP)) {
			t.Errorf("pod IP %s is not in the node's pod range %s", ready.Status.PodIP, n.l.Subnet)
		}
		done := waitPod(ctx, t, cs, ns, p.Name, "terminated", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
		})
		term := done.Status.ContainerStatuses[0].State.Terminated
		if diff := cmp.Diff(int32(7), term.ExitCode); diff != "" {
			t.Errorf("exit code (-want +got):\n%s\nreason %s, message %q", diff, term.Reason, term.Message)
		}
		if got := waitPod(ctx, t, cs, ns, p.Name, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }); got.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s, want Failed", got.Status.Phase)
		}
	})

	t.Run("RootImageRefusedByKubelet", func(t *testing.T) {
		// Admitted: runAsNonRoot is set. The image names no user, so it
		// would run as root: the kubelet refuses to create the container.
		p := jobPod("runs-as-root", n.Name(), []string{"-sleep=1s"})
		p.Spec.SecurityContext.RunAsUser, p.Spec.SecurityContext.RunAsGroup = nil, nil
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("cannot create pod: %v", err)
		}
		got := waitPod(ctx, t, cs, ns, p.Name, "CreateContainerConfigError", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
		})
		if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "runAsNonRoot") {
			t.Errorf("waiting message %q does not name runAsNonRoot", msg)
		}
	})

	t.Run("ArmadaServerImageRuns", func(t *testing.T) {
		// Armada's server image as its Dockerfile lays it out, by the name
		// the function composes, as uid 1000 with a read-only root: its
		// entrypoint ./server resolves in WORKDIR /app and runs.
		p := jobPod("armada-server", n.Name(), []string{"--help"})
		c := &p.Spec.Containers[0]
		c.Image, c.ReadinessProbe, c.VolumeMounts, p.Spec.Volumes = server.Ref, nil, nil, nil
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("cannot create pod: %v", err)
		}
		if got := w.take(); len(got) > 0 {
			t.Errorf("creating the pod gave warnings: %q", got)
		}
		got := waitPod(ctx, t, cs, ns, p.Name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if diff := cmp.Diff([]string{"job: exit code 0 (Completed)"}, terminated(got)); diff != "" {
			t.Errorf("containers (-want +got):\n%s", diff)
		}
	})

	t.Run("ComposedServer", func(t *testing.T) {
		// The server pod function-armada composes for examples/minimal.yaml
		// (its render golden file), with the Secrets and ServiceAccount it
		// names, as a container: admitted under restricted, it reads the
		// image's baked config and the composed override, loads the
		// composed certificate from the Secret's items and serves HTTPS on
		// 8080, then stops at the first backing service it cannot resolve
		// (this node has no cluster DNS yet).
		r, err := conformance.LoadRender(filepath.Join("..", "..", "..", "test", "render", "testdata", "minimal.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		const cns = "composed"
		restrictedNamespace(ctx, t, cs, cns)
		// The claim names an existing PostgreSQL's password Secret.
		mustCreate(t, func() error {
			_, err := cs.CoreV1().Secrets(cns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "armada-postgres"}, Data: map[string][]byte{"password": []byte("unused")},
			}, metav1.CreateOptions{})
			return err
		})
		p := runComposed(ctx, t, cs, r, cns, "armada-server", n.Name())
		if got := w.take(); len(got) > 0 {
			t.Errorf("creating the pod gave warnings: %q", got)
		}
		want := []string{
			"Read base config from /app/config/server/config.yaml",
			"Read override config from [/config/config.yaml]",
			"refreshing certificate from files cert: /etc/armada/tls/tls.crt key: /etc/armada/tls/tls.key",
			"Starting https server listening on 8080",
		}
		deadline := time.Now().Add(podTimeout)
		for {
			logs := n.PodLogs(cns, p.Name, "server")
			missing := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return strings.Contains(logs, s) })
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server's log lacks %q after %s:\n%s", missing, podTimeout, logs)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("ClusterDNSAndServices", func(t *testing.T) {
		// A pod resolves the kubernetes Service's name through CoreDNS and
		// reaches the API server through kube-proxy's translation of its
		// address and the node's relay; a name outside the cluster does
		// not resolve (nothing is forwarded beyond the machine), and an
		// address of the Service range that no Service holds is refused
		// (in a filter chain, the guard came after kube-router's, which
		// accepted such packets and let them head for the uplink).
		// A name outside the cluster the node was told of resolves to the
		// host's address, where Relay carries its port to a service on the
		// host's loopback.
		var lc net.ListenConfig
		host, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = host.Close() }()
		go func() {
			for {
				c, err := host.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		if err := n.Relay(ctx, 443, host.Addr().String()); err != nil {
			t.Fatal(err)
		}
		p := probePod("dns-client", n.Name(), nil, "dial", "-for", "20s",
			"tcp:kubernetes.default.svc."+ClusterDomain+":443", "tcp:"+hostName+":443", "deny:tcp:example.com:443", "deny:tcp:198.19.255.254:443")
		mustCreate(t, func() error { _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); return err })
		waitPod(ctx, t, cs, ns, p.Name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		logs := n.PodLogs(ns, p.Name, "probe")
		for _, want := range []string{
			"tcp:kubernetes.default.svc." + ClusterDomain + ":443 ok",
			"tcp:" + hostName + ":443 ok",
			"deny:tcp:example.com:443 refused: ",
			// Refused by the node's guard route, not left to time out on
			// its way to the uplink.
			"deny:tcp:198.19.255.254:443 refused: cannot connect: dial tcp 198.19.255.254:443: connect: no route to host",
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("the client's log lacks %q:\n%s", want, logs)
			}
		}
	})

	t.Run("ComposedNetworkPoliciesEnforced", func(t *testing.T) {
		checkComposedNetworkPolicies(ctx, t, cs, n)
	})

	mem := n.Memory()
	t.Logf("node memory (RSS): %s", mem)
	if !nodeMemory.MatchString(mem) {
		t.Errorf("the node's memory %q does not give each daemon's and CoreDNS's (%s)", mem, nodeMemory)
	}

	// Stop while a pod still waits: everything the node made goes.
	l := n.l
	if err := n.Stop(); err != nil {
		t.Fatalf("cannot stop node: %v", err)
	}
	if left := leftovers(l); len(left) > 0 {
		t.Errorf("the stopped node left behind:\n%s", strings.Join(left, "\n"))
	}
}

// nodeMemory is what Memory reports: each daemon's RSS and CoreDNS's
// container's, none of them zero.
var nodeMemory = regexp.MustCompile(`^containerd [1-9]\d* MiB, shims [1-9]\d* MiB \(\d+\), kubelet [1-9]\d* MiB, kube-router [1-9]\d* MiB, kube-proxy [1-9]\d* MiB, CoreDNS [1-9]\d* MiB$`)

// hostName is a name outside the cluster TestRealNode's node resolves to
// the host's address (Options.HostNames).
const hostName = "host.node.test"

// leftovers lists what a stopped node left on the machine.
func leftovers(l layout) []string {
	var out []string
	if _, err := os.Stat(l.Dir); err == nil {
		out = append(out, "directory "+l.Dir)
	}
	if m, _ := mountsUnder(l.Dir); len(m) > 0 {
		out = append(out, "mounts "+strings.Join(m, ", "))
	}
	if _, err := net.InterfaceByName(l.Bridge); err == nil {
		out = append(out, "bridge "+l.Bridge)
	}
	if d := cgroupDirs(l.CgroupRoot); len(d) > 0 {
		out = append(out, "cgroups "+strings.Join(d, ", "))
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && e.Name() != fmt.Sprint(os.Getpid()) && strings.Contains(string(b), l.Dir+"/") {
			out = append(out, "process "+e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	out = append(out, guardLeftovers(context.Background(), l)...)
	return append(out, netfilterLeftovers(context.Background())...)
}

// jobPod is a pod of the job image bound to node that meets Pod Security
// "restricted", as uid 1000, gid 2000, with a Secret volume (one item) and
// a projected ServiceAccount token.
func jobPod(name, node string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            "job",
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               armada.RestrictedPodSecurity(1000, 2000, ptr.To[int64](2000)),
			Containers: []corev1.Container{{
				Name:            "job",
				Image:           JobImage,
				Args:            args,
				SecurityContext: armada.RestrictedContainerSecurity(),
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstrPort(8080)}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "creds", MountPath: "/etc/creds", ReadOnly: true},
					{Name: "creds", MountPath: "/etc/single/user", SubPath: "user", ReadOnly: true},
					{Name: "token", MountPath: "/var/run/token", ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{{
				Name: "creds",
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "creds",
					Items:      []corev1.KeyToPath{{Key: "username", Path: "user"}},
				}},
			}, {
				Name: "token",
				VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
					ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)},
				}}}},
			}},
		},
	}
}

// waitPod polls the pod until ok, failing the test after podTimeout with
// the pod's last status.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, podTimeout)
	defer cancel()
	var last *corev1.Pod
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if ok(p) {
				return p
			}
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				t.Fatalf("pod %s/%s ended (%s) without being %s; status: %+v", ns, name, p.Status.Phase, what, terminated(p))
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s not %s after %s; last status: %+v", ns, name, what, podTimeout, statusOf(last))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// terminated is how each of the pod's containers ended.
func terminated(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			out = append(out, fmt.Sprintf("%s: exit code %d (%s)", c.Name, t.ExitCode, t.Reason))
		}
	}
	return out
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

// restrictedNamespace creates namespace ns enforcing, and warning of, the
// "restricted" Pod Security Standard.
func restrictedNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		}}}, metav1.CreateOptions{})
		return err
	})
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

// rest is imported for the warning handler's interface check.
var _ rest.WarningHandlerWithContext = &warnings{}

func intstrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) } //nolint:gosec // A small port number.

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("cannot parse pod IP %q: %v", s, err)
	}
	return a
}
