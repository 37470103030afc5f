package armada

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// proxied are the components served through the TLS proxy, each with
// the config keys of the ports it binds.
var proxied = map[string][]string{
	"binoculars": {"grpcPort", "httpPort"},
	"lookout":    {"apiPort"},
}

// proxyView is what the TLS proxy changes in a proxied component's
// render.
type proxyView struct {
	// Containers are the pod's containers: the component's name, each
	// sidecar's name: image.
	Containers []string
	// MainPorts are the component's own container ports; MainTLSMount
	// says whether it mounts the TLS volume.
	MainPorts    []string
	MainTLSMount bool
	// Listen are the ports the component's config binds; TLSBlock is its
	// config's own TLS block, which the proxy leaves off.
	Listen   []any
	TLSBlock any
	// Sidecars are each sidecar's args and ports.
	Sidecars map[string][]string
	// Probe is the readiness probe's scheme and port.
	Probe string
	// ServiceTargets are the Service's ports as port>targetPort; every
	// named target is a container port of the pod.
	ServiceTargets []string
	// Ingress are the ports the component's NetworkPolicy lets in.
	Ingress []int32
	// BinocularsURL and APIURL are the Lookout UI's
	// binocularsBaseUrlPattern and armadaApiBaseUrl.
	BinocularsURL any
	APIURL        any
}

func viewProxy(t *testing.T, out *Output, name string) proxyView {
	t.Helper()
	tpl := podTemplateOf(t, out, name)
	v := proxyView{Sidecars: map[string][]string{}}
	named := map[string]bool{}
	for i, c := range tpl.Spec.Containers {
		if i == 0 {
			v.Containers = append(v.Containers, c.Name)
		} else {
			v.Containers = append(v.Containers, c.Name+": "+c.Image)
		}
		for _, p := range c.Ports {
			named[p.Name] = true
			if i == 0 {
				v.MainPorts = append(v.MainPorts, p.Name)
			}
		}
		if i == 0 {
			for _, m := range c.VolumeMounts {
				v.MainTLSMount = v.MainTLSMount || m.Name == tlsVolume
			}
			if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil {
				v.Probe = string(p.HTTPGet.Scheme) + " " + p.HTTPGet.Port.String()
			}
			continue
		}
		var ports []string
		for _, p := range c.Ports {
			ports = append(ports, p.Name)
		}
		v.Sidecars[c.Name] = append(ports, c.Args...)
	}
	cfg := componentCfg(t, out, name)
	for _, k := range proxied[name] {
		v.Listen = append(v.Listen, get(cfg, k))
	}
	v.TLSBlock = get(cfg, "tls")
	for _, p := range find(out, name+"-service").Object.(*corev1.Service).Spec.Ports {
		if p.TargetPort.Type == intstr.String && !named[p.TargetPort.StrVal] {
			t.Errorf("Service port %s targets %q, which no container of the pod declares", p.Name, p.TargetPort.StrVal)
		}
		v.ServiceTargets = append(v.ServiceTargets, p.Name+">"+p.TargetPort.String())
	}
	if o := find(out, "netpol-"+name); o != nil {
		for _, r := range o.Object.(*networkingv1.NetworkPolicy).Spec.Ingress {
			for _, p := range r.Ports {
				if !slices.Contains(v.Ingress, p.Port.IntVal) {
					v.Ingress = append(v.Ingress, p.Port.IntVal)
				}
			}
		}
		slices.Sort(v.Ingress)
	}
	ui := componentCfg(t, out, "lookout")
	v.BinocularsURL = get(ui, "uiConfig", "binocularsBaseUrlPattern")
	v.APIURL = get(ui, "uiConfig", "armadaApiBaseUrl")
	return v
}

// TestTLSProxy proves what TLS on changes in the components whose Armada
// binary cannot serve TLS as their users need it (binoculars: plain HTTP
// and a plaintext REST gateway; Lookout: HTTP/2 connections closed when
// idle): ghostunnel sidecars serve their ports with the component's
// certificate and forward to its plain ports on loopback; the component's
// own container declares only metrics, mounts no key and turns on no TLS
// block of its own; the probes go through the proxy over HTTPS; the
// Service targets the sidecars; the NetworkPolicy lets in the TLS ports,
// never the plain ones; and the Lookout UI calls binoculars and the
// server over HTTPS. Off, nothing of it.
func TestTLSProxy(t *testing.T) {
	sidecar := func(port string, listen, target int) []string {
		return []string{
			port, "server", "--listen=0.0.0.0:" + strconv.Itoa(listen), "--target=127.0.0.1:" + strconv.Itoa(target),
			"--cert=/etc/armada/tls/tls.crt", "--key=/etc/armada/tls/tls.key", "--disable-authentication", "--timed-reload=1m",
		}
	}
	const (
		binoculars = "https://armada-binoculars.armada.svc:8080"
		api        = "https://armada-server.armada.svc:8080"
	)
	binocularsOn := func(registry string) proxyView {
		image := registry + "ghostunnel/ghostunnel:v1.8.4"
		return proxyView{
			Containers:     []string{"binoculars", "tls-grpc: " + image, "tls-http: " + image},
			MainPorts:      []string{"metrics"},
			Listen:         []any{float64(50052), float64(8081)},
			Sidecars:       map[string][]string{"tls-grpc": sidecar("grpc", 50051, 50052), "tls-http": sidecar("http", 8080, 8081)},
			Probe:          "HTTPS 8080",
			ServiceTargets: []string{"grpc>grpc", "http>http", "metrics>metrics"},
			Ingress:        []int32{8080, 50051},
			BinocularsURL:  binoculars, APIURL: api,
		}
	}
	cases := map[string]struct {
		reason    string
		component string
		spec      v1alpha1.ArmadaSpec
		want      proxyView
	}{
		"BinocularsOn": {
			reason:    "TLS on: binoculars listens on its plain ports, which only its sidecars reach.",
			component: "binoculars",
			spec:      spec(withTLS),
			want:      binocularsOn(""),
		},
		"BinocularsRegistry": {
			reason:    "spec.imageRegistry applies to the sidecar's image too.",
			component: "binoculars",
			spec:      spec(withTLS, func(s *v1alpha1.ArmadaSpec) { s.ImageRegistry = "registry.example.com:5000/" }),
			want:      binocularsOn("registry.example.com:5000/"),
		},
		"BinocularsOff": {
			reason:    "TLS off: one container serving its own ports in plain HTTP and gRPC.",
			component: "binoculars",
			spec:      spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			want: proxyView{
				Containers:     []string{"binoculars"},
				MainPorts:      []string{"grpc", "http", "metrics"},
				Listen:         []any{float64(50051), float64(8080)},
				Sidecars:       map[string][]string{},
				Probe:          " http",
				ServiceTargets: []string{"grpc>grpc", "http>http", "metrics>metrics"},
				Ingress:        []int32{8080, 50051},
				BinocularsURL:  "http://armada-binoculars.armada.svc:8080", APIURL: "http://armada-server.armada.svc:8080",
			},
		},
		"LookoutOn": {
			reason:    "TLS on: Lookout serves plain HTTP on 8081 with no TLS block of its own; one sidecar serves 8080 over TLS, HTTP/1.1 only.",
			component: "lookout",
			spec:      spec(withTLS),
			want: proxyView{
				Containers:     []string{"lookout", "tls-http: ghostunnel/ghostunnel:v1.8.4"},
				MainPorts:      []string{"metrics"},
				Listen:         []any{float64(8081)},
				Sidecars:       map[string][]string{"tls-http": sidecar("http", 8080, 8081)},
				Probe:          "HTTPS 8080",
				ServiceTargets: []string{"http>http", "metrics>metrics"},
				Ingress:        []int32{8080},
				BinocularsURL:  binoculars, APIURL: api,
			},
		},
		"LookoutOff": {
			reason:    "TLS off: Lookout serves its own port in plain HTTP.",
			component: "lookout",
			spec:      spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			want: proxyView{
				Containers:     []string{"lookout"},
				MainPorts:      []string{"http", "metrics"},
				Listen:         []any{float64(8080)},
				Sidecars:       map[string][]string{},
				Probe:          " http",
				ServiceTargets: []string{"http>http", "metrics>metrics"},
				Ingress:        []int32{8080},
				BinocularsURL:  "http://armada-binoculars.armada.svc:8080", APIURL: "http://armada-server.armada.svc:8080",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLS(t, tc.spec, "k", nil, time.Time{})
			got := viewProxy(t, out, tc.component)
			tc.want.MainTLSMount = false
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			for _, c := range podTemplateOf(t, out, tc.component).Spec.Containers[1:] {
				if c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
					t.Errorf("sidecar %s has no requests or limits: %+v", c.Name, c.Resources)
				}
				if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != tlsVolume || !c.VolumeMounts[0].ReadOnly {
					t.Errorf("sidecar %s mounts %+v, want only the TLS volume, read-only", c.Name, c.VolumeMounts)
				}
			}
		})
	}
}
