package armada

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TLS from cert-manager (spec.tls.issuerRef). Instead of generating keys,
// the function composes a cert-manager Certificate per TLS server, for the
// same DNS names a generated certificate carries, each into its own Secret
// <name>-<component>-tls. cert-manager writes tls.crt, tls.key and the
// issuer's CA as ca.crt there; a serving pod mounts all three from its own
// Secret, a client-only pod (an in-cluster executor) ca.crt from the Secret
// of the server it dials, at the same paths as generated certificates.
// Every Certificate comes from the one issuer, so each ca.crt is its CA.
//
// Keys are ECDSA P-256 in PKCS#8 (every cert-manager issuer, ACME and
// Vault included, signs them, and Go's TLS serves them; Ed25519 is not
// accepted by every issuer), a new key on every renewal (rotationPolicy
// Always). Certificates last 90 days and are renewed 30 days before they
// expire.
//
// Readiness: a workload that mounts a Certificate's Secret is not created
// until the Certificate is observed Ready (its pods could not start without
// the Secret); its component's status says which Certificate it waits for.
// A running workload keeps running while its Certificate is not Ready.
//
// Rotation: cert-manager writes the Secret only when it issues, and counts
// issuances in the Certificate's status.revision. Servers reload their
// certificate files every minute, but a client reads SSL_CERT_FILE once,
// and a renewal may bring a new CA, so the revision of the Certificate a
// pod mounts is hashed into its pod template: every issuance rolls the
// pods that mount it. While the revision is not observed, the pod template
// keeps the TLS part of the hash the observed workload carries, so a
// missing observation never rolls pods.

const (
	apiCertManager  = "cert-manager.io/v1"
	kindCertificate = "Certificate"
	// keyCertificatePrefix prefixes a Certificate's composition resource
	// name; the serving component's name follows.
	keyCertificatePrefix = "tls-certificate-"
	// certDuration and certRenewBefore are the Certificates' lifetime and
	// how long before expiry cert-manager renews them.
	certDuration    = "2160h0m0s"
	certRenewBefore = "720h0m0s"
	// defaultIssuerKind and defaultIssuerGroup are cert-manager's.
	defaultIssuerKind  = "Issuer"
	defaultIssuerGroup = "cert-manager.io"
)

// issuerKinds are the kinds spec.tls.issuerRef.kind accepts.
var issuerKinds = []string{"Issuer", "ClusterIssuer"}

// certManager says whether TLS certificates come from cert-manager.
func (in *Install) certManager() bool {
	return in.tlsOn() && in.Spec.TLS != nil && in.Spec.TLS.IssuerRef != nil
}

// certificateKey is the composition resource name of a component's
// Certificate.
func certificateKey(component string) string { return keyCertificatePrefix + component }

// certificateSecret names a component's Certificate and the Secret
// cert-manager writes it into.
func (in *Install) certificateSecret(component string) string { return in.object(component + "-tls") }

// certificate is a serving component's cert-manager Certificate.
func (in *Install) certificate(c *component) *unstructured.Unstructured {
	ref := in.Spec.TLS.IssuerRef
	names := in.tlsDNSNames(c)
	dns := make([]any, len(names))
	for i, n := range names {
		dns[i] = n
	}
	return in.unstructuredObject(apiCertManager, kindCertificate, in.certificateSecret(c.Name), c.Name, map[string]any{
		"secretName":  in.certificateSecret(c.Name),
		"dnsNames":    dns,
		"duration":    certDuration,
		"renewBefore": certRenewBefore,
		"privateKey": map[string]any{
			"algorithm": "ECDSA", "size": int64(256), "encoding": "PKCS8", "rotationPolicy": "Always",
		},
		"usages":    []any{"digital signature", "server auth"},
		"issuerRef": map[string]any{"name": ref.Name, "kind": ref.Kind, "group": ref.Group},
	})
}

// certificates composes a Certificate per serving component, ready when
// cert-manager reports it Ready.
func (r *renderer) certificates() {
	for i := range components {
		c := &components[i]
		if r.in.servesTLS(c) {
			key := certificateKey(c.Name)
			r.add(key, r.in.certificate(c), r.opt.Observed.Ready[key])
		}
	}
}

// certSource is the component whose Certificate's Secret an instance
// mounts under cert-manager: its own if it serves TLS, else that of the
// first TLS server it dials. ok is false when it mounts none.
func (in *Install) certSource(inst *instance) (string, bool) {
	if !in.certManager() {
		return "", false
	}
	if in.servesTLS(inst.component) {
		return inst.component.Name, true
	}
	if !in.trustsTLS(inst) {
		return "", false
	}
	for _, l := range inst.Clients {
		for i := range components {
			if components[i].Name == l.Target && in.servesTLS(&components[i]) {
				return l.Target, true
			}
		}
	}
	return "", false
}

// certificateWaiting is why an instance must wait for its Certificate, or
// "".
func (r *renderer) certificateWaiting(inst *instance) string {
	src, ok := r.in.certSource(inst)
	if !ok || r.opt.Observed.Ready[certificateKey(src)] {
		return ""
	}
	return "Waiting for the TLS Certificate " + r.in.certificateSecret(src) + " to become Ready"
}

// certificateHash is the TLS part of an instance's config hash under
// cert-manager: a hash of the observed revision of the Certificate it
// mounts or, while that is not observed, the TLS part the observed
// workload carries; "" when neither is known (the workload is not composed
// then: it waits for the Certificate).
func (r *renderer) certificateHash(inst *instance, src string) string {
	if rev, ok := r.opt.Observed.CertRevisions[certificateKey(src)]; ok {
		sum := sha256.Sum256([]byte(r.in.certificateSecret(src) + "\x00" + strconv.FormatInt(rev, 10)))
		return hex.EncodeToString(sum[:8])
	}
	if w, ok := r.opt.Observed.Workloads[inst.Name]; ok {
		if _, tls, found := strings.Cut(w.ConfigHash, "-"); found {
			return tls
		}
	}
	return ""
}

// defaultIssuerRef fills cert-manager's defaults into an issuer reference.
func defaultIssuerRef(ref *v1alpha1.IssuerRef) {
	if ref.Kind == "" {
		ref.Kind = defaultIssuerKind
	}
	if ref.Group == "" {
		ref.Group = defaultIssuerGroup
	}
}
