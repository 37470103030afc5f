package armada

import (
	corev1 "k8s.io/api/core/v1"
)

// The OIDC provider's CA (spec.auth.oidc.caSecretRef). Every component
// that verifies tokens builds Armada's OIDC verifier at start: it fetches
// the provider's discovery document and keys over HTTPS with Go's default
// client, which trusts the system roots only (and, with spec.tls, the
// private CA SSL_CERT_FILE names). A provider a private CA vouches for is
// then unreachable and the component exits ("x509: certificate signed by
// unknown authority"). With the CA set, the component mounts it and
// SSL_CERT_DIR names the system's certificate directory and the CA's:
// Go reads every file of each, beside SSL_CERT_FILE's.

const (
	// oidcCADir is where a component mounts the provider's CA.
	oidcCADir = "/etc/armada/oidc-ca"
	// oidcCAFile is the CA's file name there.
	oidcCAFile = "ca.crt"
	// systemCertDir is the images' directory of trusted certificates
	// (Debian's and Alpine's), which SSL_CERT_DIR replaces.
	systemCertDir = "/etc/ssl/certs"
)

// oidcExtras are the pod settings that make an instance trust the OIDC
// provider's CA: for a component whose API verifies tokens, with
// spec.auth.oidc.caSecretRef set.
func (in *Install) oidcExtras(c *component) ([]corev1.EnvVar, []corev1.Volume, []corev1.VolumeMount) {
	o := in.Spec.Auth.OIDC
	if c.Auth == authNone || o == nil || o.CASecretRef == nil {
		return nil, nil, nil
	}
	return []corev1.EnvVar{{Name: "SSL_CERT_DIR", Value: systemCertDir + ":" + oidcCADir}},
		[]corev1.Volume{{Name: "oidc-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: o.CASecretRef.Name, Items: []corev1.KeyToPath{{Key: o.CASecretRef.Key, Path: oidcCAFile}},
		}}}},
		[]corev1.VolumeMount{{Name: "oidc-ca", MountPath: oidcCADir, ReadOnly: true}}
}
