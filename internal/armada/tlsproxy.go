package armada

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The TLS proxy: a component whose Armada binary cannot serve TLS on the
// ports its users call as they need it (its row's TLSProxy: binoculars,
// whose HTTP port is always plain and whose REST gateway dials its own
// gRPC port in plaintext in Armada v0.22.x; Lookout, whose own TLS
// server closes every idle HTTP/2 connection, which browsers do not
// survive) serves them through ghostunnel, a TLS-terminating proxy run
// as a sidecar, when spec.tls is on. ghostunnel offers no ALPN, so
// clients speak HTTP/1.1 (or gRPC's own protocol) through it. The
// component then listens on its plain ports (the served ports plus
// tlsProxyPlainOffset), which no container port, Service or NetworkPolicy
// names: Armada binds every interface (":<port>") and has no setting for
// the address, so the composed NetworkPolicy, which lets only the served
// ports in, is what keeps other pods off the plain ones. One sidecar per
// served port listens on it with the component's certificate and forwards
// to the plain port on 127.0.0.1; the Service's named ports and the
// probes (HTTPS /health through the proxy) point at the sidecars.

const (
	// tlsProxyImage and TLSProxyVersion are ghostunnel's image and the
	// version tools/ghostunnel/go.mod pins (internal/harness/controlplane's
	// TestPinsMatchToolModules), the binary the tests run as the sidecar.
	tlsProxyImage   = "ghostunnel/ghostunnel"
	TLSProxyVersion = "v1.8.4"
	// tlsProxyPlainOffset moves a proxied component's served ports to its
	// plain ones: 50051 to 50052, 8080 to 8081.
	tlsProxyPlainOffset = 1
	// tlsProxyMode is ghostunnel's mode: a TLS server in front of a
	// plain one.
	tlsProxyMode = "server"
	// tlsProxyReload is how often ghostunnel rereads its certificate.
	tlsProxyReload = "1m"
)

// tlsProxied says whether a component serves its ports through the TLS
// proxy.
func (in *Install) tlsProxied(c *component) bool { return in.tlsOn() && c.TLSProxy }

// listenPort is the port a component's config binds for a served port:
// the port itself, or its plain port behind the TLS proxy.
func (in *Install) listenPort(c *component, port int32) int32 {
	if in.tlsProxied(c) {
		return port + tlsProxyPlainOffset
	}
	return port
}

// tlsProxyResources are a sidecar's: ghostunnel copies bytes between two
// sockets.
func tlsProxyResources() corev1.ResourceRequirements {
	return requirements("20m", "32Mi", "200m", "128Mi")
}

// withTLSProxy turns a proxied component's long-running pod template
// into the TLS-proxied one: the component's container keeps only its
// metrics port, its probes go to the served HTTP port over HTTPS (through
// the proxy to its /health), the TLS volume is mounted only by the
// sidecars, one per served port.
func (in *Install) withTLSProxy(tpl *corev1.PodTemplateSpec, c *component) {
	if !in.tlsProxied(c) {
		return
	}
	main := &tpl.Spec.Containers[0]
	tlsMounts, kept := partition(main.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == tlsVolume })
	metrics, served := partition(main.Ports, func(p corev1.ContainerPort) bool { return p.Name == portNameMetrics })
	main.VolumeMounts, main.Ports = kept, metrics
	for _, pr := range []*corev1.Probe{main.ReadinessProbe, main.LivenessProbe} {
		if pr != nil && pr.HTTPGet != nil {
			pr.HTTPGet.Port = intstr.FromInt32(portHTTP)
			pr.HTTPGet.Scheme = corev1.URISchemeHTTPS
		}
	}
	for _, p := range served {
		tpl.Spec.Containers = append(tpl.Spec.Containers, corev1.Container{
			Name:  "tls-" + p.Name,
			Image: in.thirdPartyImage(tlsProxyImage + ":" + TLSProxyVersion),
			Args: []string{
				tlsProxyMode,
				fmt.Sprintf("--listen=0.0.0.0:%d", p.ContainerPort),
				fmt.Sprintf("--target=127.0.0.1:%d", p.ContainerPort+tlsProxyPlainOffset),
				"--cert=" + tlsDir + "/" + tlsCertFile,
				"--key=" + tlsDir + "/" + tlsKeyFile,
				// Users authenticate to Armada (basic auth, OIDC), not
				// with client certificates.
				"--disable-authentication",
				"--timed-reload=" + tlsProxyReload,
			},
			Ports:           []corev1.ContainerPort{p},
			Resources:       tlsProxyResources(),
			VolumeMounts:    tlsMounts,
			SecurityContext: RestrictedContainerSecurity(),
		})
	}
}

// partition splits xs into those for which in holds and the rest, in
// order.
func partition[T any](xs []T, in func(T) bool) (yes, no []T) {
	for _, x := range xs {
		if in(x) {
			yes = append(yes, x)
		} else {
			no = append(no, x)
		}
	}
	return yes, no
}
