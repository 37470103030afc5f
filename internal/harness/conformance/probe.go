package conformance

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// checkProbe runs a component's rendered readinessProbe, as the kubelet
// would, against the process: an httpGet must answer 2xx or 3xx, a tcpSocket
// must accept, within timeout. The probe's port, a container port name or
// number, is the container port whose number a listening key of the
// loaded config sets (the Service targets the same port); the test moved
// that key to a free port, which is where the probe goes.
func checkProbe(o *outcome, rn *Run, c *Component, timeout time.Duration) {
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
		o.Notes = append(o.Notes, fmt.Sprintf(
			"readinessProbe %s on port %d goes through the pod's %s sidecar %s: checkBinocularsTLS and checkLookoutTLS run it through the real proxy",
			kind, number, sc.Tool, sc.Inv.Container))
		return
	}
	if !ok {
		o.errorf("readinessProbe %s targets port %s (%d), which no listening key of the loaded config sets: the probe would never pass", kind, port.String(), number)
		return
	}
	if err := PollProbe(p, moved, timeout); err != nil {
		o.errorf("readinessProbe %s on port %s (%s, moved to %d) did not pass within %s; last: %v", kind, port.String(), key, moved, timeout, err)
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("ready by its readinessProbe (%s on %s, %s)", kind, port.String(), key))
}

// PollProbe runs a probe (podrun.Probe, as the Runner and the kubelet do)
// every half second until it passes or timeout passes; it returns the
// last failure.
func PollProbe(p *corev1.Probe, port int, timeout time.Duration) error {
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
func movedPort(rn *Run, moved map[string]int, number int32) (key string, port int, ok bool) {
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
