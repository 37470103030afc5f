package conformance

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

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
			rn := &Run{Inv: &podrun.Invocation{Ports: tc.ports, Readiness: tc.probe}, Cfg: cfg}
			var o outcome
			checkProbe(&o, rn, &Component{Moved: tc.moved}, time.Second)
			if diff := cmp.Diff(tc.want, len(o.Errors) == 0); diff != "" {
				t.Errorf("%s\ncheckProbe passed: -want, +got:\n%s\nerrors: %v", tc.reason, diff, o.Errors)
			}
		})
	}
}
