package armada

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestOIDCProviderCA proves that with spec.auth.oidc.caSecretRef every
// component that verifies tokens (it fetches the provider's keys at start,
// over HTTPS) trusts the provider's CA beside the system roots, and that
// nothing else changes: not the executor, which verifies no token, and not
// a claim without the field.
func TestOIDCProviderCA(t *testing.T) {
	oidc := func(ca *v1alpha1.SecretKeyRef) func(*v1alpha1.ArmadaSpec) {
		return func(s *v1alpha1.ArmadaSpec) {
			s.Auth.OIDC = &v1alpha1.OIDC{ProviderURL: "https://login.example", ClientID: "lookout", CASecretRef: ca}
		}
	}
	ca := &v1alpha1.SecretKeyRef{Name: "login-ca", Key: "root.pem"}
	trusted := trust{
		SSLCertDir: "/etc/ssl/certs:/etc/armada/oidc-ca",
		Volume:     &corev1.SecretVolumeSource{SecretName: "login-ca", Items: []corev1.KeyToPath{{Key: "root.pem", Path: "ca.crt"}}},
		MountPath:  "/etc/armada/oidc-ca",
	}
	cases := map[string]struct {
		reason    string
		spec      v1alpha1.ArmadaSpec
		instances []string
		want      trust
	}{
		"Verifiers": {
			reason:    "Each component whose API verifies tokens mounts the CA and names it in SSL_CERT_DIR, with the system's directory kept.",
			spec:      spec(withTLS, oidc(ca)),
			instances: []string{"server", "scheduler", "lookout", "binoculars"},
			want:      trusted,
		},
		"Executor": {
			reason:    "An executor verifies no token: nothing mounted.",
			spec:      spec(withTLS, oidc(ca)),
			instances: []string{"executor-local"},
		},
		"NoCA": {
			reason:    "Without caSecretRef the system roots are trusted as they are.",
			spec:      spec(withTLS, oidc(nil)),
			instances: []string{"server", "lookout", "binoculars"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLS(t, tc.spec, "k", nil, time.Time{})
			for _, inst := range tc.instances {
				if diff := cmp.Diff(tc.want, oidcTrust(t, out, inst)); diff != "" {
					t.Errorf("%s\n%s (-want +got):\n%s", tc.reason, inst, diff)
				}
			}
		})
	}
}

// trust is what a pod has of the OIDC provider's CA.
type trust struct {
	SSLCertDir string
	Volume     *corev1.SecretVolumeSource
	MountPath  string
}

func oidcTrust(t *testing.T, out *Output, name string) trust {
	t.Helper()
	tpl := podTemplateOf(t, out, name)
	var got trust
	for _, v := range tpl.Spec.Volumes {
		if v.Name == "oidc-ca" {
			got.Volume = v.Secret
		}
	}
	c := tpl.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "SSL_CERT_DIR" {
			got.SSLCertDir = e.Value
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "oidc-ca" {
			got.MountPath = m.MountPath
		}
	}
	return got
}
