package armada

import (
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Ingress: one Ingress per host spec.ingress sets, routed to the
// component port that serves it.

// An ingressRoute is one host of spec.ingress and the component port it
// routes to.
type ingressRoute struct {
	suffix, host, component, port string
	grpc                          bool
}

// ingressRoutes are the Ingresses spec.ingress asks for: one per host set.
func (in *Install) ingressRoutes() []ingressRoute {
	ing := in.Spec.Ingress
	if ing == nil {
		return nil
	}
	var out []ingressRoute
	for _, i := range []ingressRoute{
		{"grpc", ing.GRPCHost, "server", "grpc", true},
		{"rest", ing.RESTHost, "server", "http", false},
		{"lookout", ing.LookoutHost, dbLookout, "http", false},
		{"executor-api", ing.ExecutorAPIHost, dbScheduler, "grpc", true},
	} {
		if i.host != "" {
			out = append(out, i)
		}
	}
	return out
}

// ingress routes one host to a component's port. ingress-nginx is told to
// speak gRPC to a gRPC backend, and TLS to a backend that serves it.
func (in *Install) ingress(suffix, host, component, port string, grpc bool) *networkingv1.Ingress {
	spec := in.Spec.Ingress
	ann := maps.Clone(spec.Annotations)
	if p := in.backendProtocol(component, grpc); p != "" {
		if ann == nil {
			ann = map[string]string{}
		}
		ann["nginx.ingress.kubernetes.io/backend-protocol"] = p
	}
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: in.meta(in.object(suffix), component),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: in.object(component),
							Port: networkingv1.ServiceBackendPort{Name: port},
						}},
					}},
				}},
			}},
		},
	}
	ing.Annotations = ann
	if spec.ClassName != "" {
		ing.Spec.IngressClassName = ptr.To(spec.ClassName)
	}
	if spec.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: spec.TLSSecretName}}
	}
	return ing
}

// backendProtocol is ingress-nginx's backend-protocol for a component's
// gRPC or HTTP port, or empty for plain HTTP.
func (in *Install) backendProtocol(component string, grpc bool) string {
	tls := false
	for i := range components {
		if c := &components[i]; c.Name == component {
			tls = in.servesTLS(c) && (grpc || c.TLSHTTP)
		}
	}
	switch {
	case grpc && tls:
		return "GRPCS"
	case grpc:
		return "GRPC"
	case tls:
		return "HTTPS"
	}
	return ""
}

// ingresses composes the Ingresses spec.ingress asks for.
func (r *renderer) ingresses() {
	for _, i := range r.in.ingressRoutes() {
		key := "ingress-" + i.suffix
		r.add(key, r.in.ingress("ingress-"+i.suffix, i.host, i.component, i.port, i.grpc), r.exists(key))
	}
}
