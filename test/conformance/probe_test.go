package conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/armadaproject/armada-crossplane/internal/podrun"
)

// checkProbe runs a component's rendered readinessProbe, as the kubelet
// would, against the process: an httpGet must answer 2xx or 3xx, a tcpSocket
// must accept, within timeout. The probe's port, a container port name or
// number, is the container port whose number a listening key of the
// loaded config sets (the Service targets the same port); the test moved
// that key to a free port, which is where the probe goes.
func checkProbe(o *outcome, rn *run, c *component, timeout time.Duration) {
	p := rn.Inv.Readiness
	if p == nil {
		o.errorf("has no readinessProbe: nothing tells Kubernetes when it is ready")
		return
	}
	var port intstr.IntOrString
	var kind string
	scheme := corev1.URISchemeHTTP
	switch {
	case p.HTTPGet != nil:
		if p.HTTPGet.Scheme != "" {
			scheme = p.HTTPGet.Scheme
		}
		port, kind = p.HTTPGet.Port, "httpGet "+string(scheme)+" "+p.HTTPGet.Path
	case p.TCPSocket != nil:
		port, kind = p.TCPSocket.Port, "tcpSocket"
	default:
		o.errorf("readinessProbe is neither httpGet nor tcpSocket, which the test cannot run")
		return
	}
	number := port.IntVal
	if port.Type == intstr.String {
		n, ok := rn.Inv.Ports[port.StrVal]
		if !ok {
			o.errorf("readinessProbe names port %q, which the container does not declare", port.StrVal)
			return
		}
		number = n
	}
	key, moved, ok := movedPort(rn, c.Moved, number)
	if sc := servingSidecar(rn, number); !ok && sc != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("readinessProbe %s on port %d goes through the pod's %s sidecar %s: checkBinocularsTLS runs it through the real proxy", kind, number, sc.Tool, sc.Inv.Container))
		return
	}
	if !ok {
		o.errorf("readinessProbe %s targets port %s (%d), which no listening key of the loaded config sets: the probe would never pass", kind, port.String(), number)
		return
	}
	if err := pollProbe(p, moved, timeout); err != nil {
		o.errorf("readinessProbe %s on port %s (%s, moved to %d) did not pass within %s; last: %v", kind, port.String(), key, moved, timeout, err)
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("ready by its readinessProbe (%s on %s, %s)", kind, port.String(), key))
}

// pollProbe runs a probe (podrun.Probe, as the Runner and the kubelet do)
// every half second until it passes or timeout passes; it returns the
// last failure.
func pollProbe(p *corev1.Probe, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := podrun.Probe(context.Background(), p, port)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// movedPort finds the listening key whose rendered value is number, and
// where it was moved.
func movedPort(rn *run, moved map[string]int, number int32) (key string, port int, ok bool) {
	keys := make([]string, 0, len(moved))
	for k := range moved {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v, _ := rn.Effective(k); v == strconv.Itoa(int(number)) {
			return k, moved[k], true
		}
	}
	return "", 0, false
}

func TestCheckProbe(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer secure.Close()
	portOf := func(s *httptest.Server) int {
		_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
		n, _ := strconv.Atoi(p)
		return n
	}
	httpProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}}
	cases := map[string]struct {
		reason string
		probe  *corev1.Probe
		ports  map[string]int32
		moved  map[string]int
		want   bool
	}{
		"Ready": {
			reason: "The probe's named port is the container port httpPort sets; the process answers 200 where httpPort moved.",
			probe:  httpProbe, ports: map[string]int32{"http": 8080}, moved: map[string]int{"httpPort": portOf(ok)}, want: true,
		},
		"HTTPS": {
			reason: "An HTTPS probe gets over TLS without verifying, as the kubelet does.",
			probe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTPS}}},
			ports:  map[string]int32{"http": 8080}, moved: map[string]int{"httpPort": portOf(secure)}, want: true,
		},
		"HTTPToHTTPS": {
			reason: "A plain HTTP probe of a TLS port fails (the server's answer is 400).",
			probe:  httpProbe, ports: map[string]int32{"http": 8080}, moved: map[string]int{"httpPort": portOf(secure)},
		},
		"NotReady": {
			reason: "A 503 where the probe goes fails the check.",
			probe:  httpProbe, ports: map[string]int32{"http": 8080}, moved: map[string]int{"httpPort": portOf(down)},
		},
		"PortNoKeySets": {
			reason: "A probe on a port no listening key sets would never pass in a pod.",
			probe:  httpProbe, ports: map[string]int32{"http": 8081}, moved: map[string]int{"httpPort": portOf(ok)},
		},
		"UndeclaredPort": {
			reason: "A probe naming a port the container does not declare fails.",
			probe:  httpProbe, ports: map[string]int32{}, moved: map[string]int{"httpPort": portOf(ok)},
		},
		"NoProbe": {
			reason: "A component without a readinessProbe fails.",
			ports:  map[string]int32{"http": 8080}, moved: map[string]int{"httpPort": portOf(ok)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := &armadaConfig{Base: map[string]any{"httpPort": 8080}}
			rn := &run{Inv: &invocation{Ports: tc.ports, Readiness: tc.probe}, Cfg: cfg}
			var o outcome
			checkProbe(&o, rn, &component{Moved: tc.moved}, time.Second)
			if diff := cmp.Diff(tc.want, len(o.Errors) == 0); diff != "" {
				t.Errorf("%s\ncheckProbe passed: -want, +got:\n%s\nerrors: %v", tc.reason, diff, o.Errors)
			}
		})
	}
}
