package armada

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// TestNetworkPoliciesAllowWhatArmadaDials derives Armada's connections
// independently of the table, from what the rendered objects tell each
// pod to dial (addresses in the generated configs, the topic-init Job's
// admin URL, a ServiceAccount token mounted), what the Ingresses and the
// provider-armada ProviderConfig route to, and what ServiceMonitors
// scrape, resolves each address to pods through the rendered Services (or
// CloudNativePG's and the Pulsar chart's Service names), and checks the
// composed policies allow each, with DNS for every name.
func TestNetworkPoliciesAllowWhatArmadaDials(t *testing.T) {
	for name, w := range exampleWorlds(t) {
		t.Run(name, func(t *testing.T) {
			checked := 0
			check := func(src, dst netEndpoint, port int32, proto corev1.Protocol, why string) {
				t.Helper()
				checked++
				if !w.model.allowed(t, src, dst, port, proto) {
					t.Errorf("%s -> %s:%d/%s (%s) is denied", src, dst, port, proto, why)
				}
			}
			dial := func(src netEndpoint, addr, why string) {
				t.Helper()
				host, p, err := net.SplitHostPort(addr)
				if err != nil {
					t.Fatalf("%s: %s: %v", src, addr, err)
				}
				if _, err := netip.ParseAddr(host); err != nil {
					check(src, w.find(kindDNS, ""), 53, corev1.ProtocolUDP, "resolve "+host)
				}
				for _, dst := range w.resolve(t, host, port32(p)) {
					check(src, dst.e, dst.port, corev1.ProtocolTCP, why+" "+addr)
				}
			}
			for _, src := range w.endpoints {
				if w.kind[src.String()] != kindArmada {
					continue
				}
				for _, a := range w.dialled(t, src) {
					dial(src, a[1], a[0])
				}
				if tpl := w.templates[src.Name]; tpl.Spec.AutomountServiceAccountToken != nil && *tpl.Spec.AutomountServiceAccountToken {
					// kubernetes.default.svc:443 is DNATed to the API
					// server's address, on 443 or 6443.
					check(src, w.find(kindAPIServer, ""), 443, corev1.ProtocolTCP, "service account token")
					check(src, w.find(kindAPIServer, ""), 6443, corev1.ProtocolTCP, "service account token")
				}
			}
			for _, o := range w.out.Objects {
				switch obj := o.Object.(type) {
				case *networkingv1.Ingress:
					b := obj.Spec.Rules[0].HTTP.Paths[0].Backend.Service
					for _, dst := range w.servicePods(t, b.Name, 0, b.Port.Name) {
						check(w.find(kindIngressCtl, ""), dst.e, dst.port, corev1.ProtocolTCP, "Ingress "+obj.Name)
					}
				case *armadav1.ProviderConfig:
					host, p, _ := net.SplitHostPort(obj.Spec.Endpoint)
					for _, dst := range w.resolve(t, host, port32(p)) {
						check(w.find(kindProvider, ""), dst.e, dst.port, corev1.ProtocolTCP, "ProviderConfig "+obj.Name)
					}
				case *unstructured.Unstructured:
					if obj.GetKind() != "ServiceMonitor" {
						continue
					}
					sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
					eps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
					for _, svc := range w.services {
						if !labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)) {
							continue
						}
						for _, ep := range eps {
							port, _ := ep.(map[string]any)["port"].(string)
							for _, dst := range w.servicePods(t, svc.Name, 0, port) {
								check(w.find(kindPrometheus, ""), dst.e, dst.port, corev1.ProtocolTCP, "ServiceMonitor "+obj.GetName())
							}
						}
					}
				}
			}
			if checked < 20 {
				t.Errorf("only %d connections derived from the rendered objects", checked)
			}
		})
	}
}

// dialled are the addresses an Armada pod's rendered config (or, for the
// topic-init Job, its environment) tells it to dial, each with the key
// that says so.
func (w *netWorld) dialled(t *testing.T, src netEndpoint) [][2]string {
	t.Helper()
	tpl := w.templates[src.Name]
	var out [][2]string
	hostPort := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if u.Port() != "" {
			return u.Host
		}
		return net.JoinHostPort(u.Hostname(), strconv.Itoa(int(urlPort(raw))))
	}
	for _, e := range tpl.Spec.Containers[0].Env {
		if e.Name == "ADMIN_URL" {
			out = append(out, [2]string{"ADMIN_URL", hostPort(e.Value)})
		}
	}
	var secret string
	for _, v := range tpl.Spec.Volumes {
		if v.Name == "config" {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return out
	}
	var cfg map[string]any
	for _, o := range w.out.Objects {
		if s, ok := o.Object.(*corev1.Secret); ok && s.Name == secret {
			if err := yaml.Unmarshal(s.Data[configKey], &cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg == nil {
		t.Fatalf("%s: config Secret %s not composed", src, secret)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, v := range m {
			p := path + "." + k
			s, _ := v.(string)
			switch k {
			case "armadaUrl":
				// A leader connection names the leader's pod.
				out = append(out, [2]string{p, strings.ReplaceAll(s, "<name>", w.in.object(src.Name)+"-0")})
			case "URL", "restURL", "providerUrl":
				out = append(out, [2]string{p, hostPort(s)})
			case "addrs":
				for _, a := range v.([]any) {
					out = append(out, [2]string{p, a.(string)})
				}
			case "connection":
				c, _ := v.(map[string]any)
				if h, ok := c["host"].(string); ok {
					out = append(out, [2]string{p, net.JoinHostPort(h, fmt.Sprint(c["port"]))})
				}
			}
			walk(p, v)
		}
	}
	walk("", cfg)
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	return out
}

// A resolved address is a pod and the port it listens on.
type resolved struct {
	e    netEndpoint
	port int32
}

// resolve is where a host and port lead: the pods of a rendered Service in
// Armada's namespace (or of CloudNativePG's and the Pulsar chart's
// Services), or an address outside Armada's namespace.
func (w *netWorld) resolve(t *testing.T, host string, port int32) []resolved {
	t.Helper()
	suffix := "." + w.in.Namespace + ".svc"
	if !strings.HasSuffix(host, suffix) {
		return []resolved{{w.find(kindExternal, ""), port}, {w.find(kindStranger, "outsider"), port}}
	}
	labelsOf := strings.Split(strings.TrimSuffix(host, suffix), ".")
	svc := labelsOf[len(labelsOf)-1]
	if _, ok := w.services[svc]; ok {
		return w.servicePods(t, svc, port, "")
	}
	switch svc {
	case w.find(kindPostgres, "").Labels["cnpg.io/cluster"] + "-rw":
		return []resolved{{w.find(kindPostgres, ""), port}}
	case w.find(kindPulsar, "").Labels["cluster"] + "-broker":
		return []resolved{{w.find(kindPulsar, ""), port}}
	}
	t.Fatalf("cannot resolve %s: no Service %s composed", host, svc)
	return nil
}

// servicePods are the pods behind a rendered Service's port, given by
// number or name, and their target port.
func (w *netWorld) servicePods(t *testing.T, name string, port int32, portName string) []resolved {
	t.Helper()
	svc := w.services[name]
	if svc == nil {
		t.Fatalf("no Service %s composed", name)
	}
	var out []resolved
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port && sp.Name != portName {
			continue
		}
		for _, e := range w.endpoints {
			if e.Namespace != svc.Namespace || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(e.Labels)) {
				continue
			}
			target := sp.TargetPort.IntVal
			if sp.TargetPort.StrVal != "" {
				target = e.NamedPorts[sp.TargetPort.StrVal]
			}
			out = append(out, resolved{e, target})
		}
	}
	if len(out) == 0 {
		t.Fatalf("Service %s port %d%s leads to no pod", name, port, portName)
	}
	return out
}
