package podrun

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// probeClient probes over HTTP or HTTPS; as the kubelet's, it does not
// verify the serving certificate.
var probeClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // As the kubelet's probes.
}

// checkReady runs a long-running pod's readiness probe (its first
// container's) and, once it passes, writes the workload's available
// status. A pod whose process exited is restarted, as the kubelet would.
func (r *Runner) checkReady(ctx context.Context, p *pod, u *unstructured.Unstructured) {
	r.mu.Lock()
	procs := p.procs
	r.mu.Unlock()
	if len(procs) == 0 {
		return
	}
	for _, pr := range procs {
		exited, code := pr.Exited()
		if !exited {
			continue
		}
		// As the kubelet's CrashLoopBackOff: 5 s, doubling, at most a
		// minute, so a crashing component does not eat the machine.
		if p.restartAt.IsZero() {
			delay := min(5*time.Second<<min(p.restarts, 4), time.Minute)
			p.restartAt = time.Now().Add(delay)
			p.err = errors.Errorf("exited with code %d; restarting in %s; last lines of %s:\n%s", code, delay, pr.LogPath(), pr.Tail(15))
			r.o.Logf("runner: %s %v", p.w.ID(), p.err)
		}
		if time.Now().Before(p.restartAt) {
			return
		}
		p.restarts++
		p.restartAt = time.Time{}
		p.stop()
		p.ready = false
		if err := r.startPod(p); err != nil {
			p.err = err
		}
		return
	}
	if err := r.probe(ctx, p); err != nil {
		p.err = errors.Wrap(err, "not ready")
		return
	}
	p.err = nil
	if !p.ready {
		r.o.Logf("runner: %s ready", p.w.ID())
	}
	p.ready = true
	if !available(u) {
		if err := r.markHealthy(ctx, u); err != nil {
			r.o.Logf("runner: %v", err)
		}
	}
}

// available reports whether a Deployment's or StatefulSet's status says
// its replicas are ready for its current generation.
func available(u *unstructured.Unstructured) bool {
	g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	return g == u.GetGeneration() && n > 0
}

// probe runs the first container's readiness probe once; without one the
// pod is ready once it runs.
func (r *Runner) probe(ctx context.Context, p *pod) error {
	c := p.w.Pod.Containers[0]
	pr := c.ReadinessProbe
	if pr == nil {
		return nil
	}
	var port intstr.IntOrString
	switch {
	case pr.HTTPGet != nil:
		port = pr.HTTPGet.Port
	case pr.TCPSocket != nil:
		port = pr.TCPSocket.Port
	default:
		return errors.Errorf("%s: only httpGet and tcpSocket readiness probes can be run", p.w.ID())
	}
	local, err := r.localPort(p, c, port)
	if err != nil {
		return err
	}
	return errors.Wrap(Probe(ctx, pr, local), p.w.ID())
}

// Probe runs a readiness probe once, as the kubelet does, against the
// process listening on the loopback port its container port moved to: an
// httpGet (HTTP, or HTTPS without verifying) must answer 2xx or 3xx, a
// tcpSocket must accept.
func Probe(ctx context.Context, pr *corev1.Probe, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch {
	case pr.HTTPGet != nil:
		scheme := "http"
		if pr.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://127.0.0.1:"+strconv.Itoa(port)+pr.HTTPGet.Path, http.NoBody)
		if err != nil {
			return errors.Wrap(err, "cannot build probe")
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return errors.Errorf("readiness probe %s answered %s", req.URL, resp.Status)
		}
		return nil
	case pr.TCPSocket != nil:
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	default:
		return errors.New("only httpGet and tcpSocket readiness probes can be run")
	}
}

// localPort resolves a container port (by name or number) to the
// loopback port its process listens on.
func (r *Runner) localPort(p *pod, c corev1.Container, port intstr.IntOrString) (int, error) {
	n := port.IntVal
	if port.Type == intstr.String {
		// A named port is unique in the pod: a Service's may be a
		// sidecar's (binoculars' TLS proxies).
		n = 0
		for _, ctr := range append([]corev1.Container{c}, p.w.Pod.Containers...) {
			for _, cp := range ctr.Ports {
				if cp.Name == port.StrVal && n == 0 {
					n = cp.ContainerPort
				}
			}
		}
		if n == 0 {
			return 0, errors.Errorf("%s container %s has no port named %s", p.w.ID(), c.Name, port.StrVal)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	local, ok := p.local[n]
	if !ok {
		return 0, errors.Errorf("%s container %s port %d is set by no listening key of its config, so it was not moved", p.w.ID(), c.Name, n)
	}
	return local, nil
}

// relayServices makes every Service's names (name, name.ns, name.ns.svc
// and name.ns.svc.cluster.local) and ports reach the port of the pod it
// selects, as kube-proxy and cluster DNS would, and rewrites the shared
// hosts file every pod sees.
func (r *Runner) relayServices(ctx context.Context) error {
	var svcs corev1.ServiceList
	if err := r.o.Client.List(ctx, &svcs, client.InNamespace(r.o.Namespace)); err != nil {
		return errors.Wrap(err, "cannot list Services")
	}
	r.mu.Lock()
	pods := make([]*pod, 0, len(r.pods))
	for _, id := range sortedKeys(r.pods) {
		pods = append(pods, r.pods[id])
	}
	r.mu.Unlock()
	for _, s := range svcs.Items {
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		for _, p := range pods {
			if p.w.Kind == kindJob || !sel.Matches(labels.Set(p.w.Labels)) || len(p.w.Pod.Containers) == 0 {
				continue
			}
			if err := r.relayService(s, p); err != nil {
				return err
			}
		}
	}
	_, err := r.o.Names.HostsFile(r.o.Dir, nil)
	return errors.Wrap(err, "cannot write hosts file")
}

// relayService relays each port of a Service to the pod p it selects.
func (r *Runner) relayService(s corev1.Service, p *pod) error {
	for _, sp := range s.Spec.Ports {
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		local, err := r.localPort(p, p.w.Pod.Containers[0], target)
		if err != nil {
			continue
		}
		for _, host := range []string{s.Name, s.Name + "." + s.Namespace, s.Name + "." + s.Namespace + ".svc", s.Name + "." + s.Namespace + ".svc.cluster.local"} {
			addr := net.JoinHostPort(host, strconv.Itoa(int(sp.Port)))
			if err := r.o.Names.Relay(addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(local))); err != nil {
				return err
			}
		}
	}
	return nil
}
