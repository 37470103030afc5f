package armada

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Token authentication of the in-cluster Pulsar. The function generates
// an HS256 key like a password (a credentials Secret key, stable across
// reconciles) and composes the Secrets the Apache Pulsar chart mounts when
// its JWT authentication is on (auth.authentication.jwt with
// usingSecretKey: <release>-token-symmetric-key, key SECRETKEY, and the
// brokers' own token, <release>-token-<auth.superUsers.broker>, key
// TOKEN), plus the token Armada's components and the topic-init Job
// present, <release>-token-armada. The brokers authorize only the
// superuser roles, broker-admin and armada: a client without a token, or
// with one the key did not sign, is refused.
const (
	// pulsarTokenKey is the credentials Secret key of the signing key.
	pulsarTokenKey = "pulsar-token-key"
	// pulsarRoleBroker is the brokers' own role (auth.superUsers.broker).
	pulsarRoleBroker = "broker-admin"
	// pulsarRoleArmada is the role of Armada's components and the
	// topic-init Job (auth.superUsers.client).
	pulsarRoleArmada = "armada"
	// Keys of the chart's token Secrets.
	pulsarSecretKeyKey = "SECRETKEY"
	pulsarTokenSecretK = "TOKEN"
)

// Composition resource names of the token Secrets.
const (
	keyPulsarKeySecret = "pulsar-auth-key"
	keyPulsarTokenPfx  = "pulsar-auth-token-"
)

// PulsarToken is a JWT Pulsar's AuthenticationProviderToken accepts from a
// broker whose tokenSecretKey is key: HS256, the role in "sub", no expiry.
// The same key and role always give the same token.
func PulsarToken(key []byte, role string) string {
	claims, _ := json.Marshal(map[string]string{"sub": role}) //nolint:errchkjson // A map of strings always marshals.
	enc := base64.RawURLEncoding
	unsigned := enc.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

// pulsarKeySecret names the Secret of the signing key the chart mounts.
func (in *Install) pulsarKeySecret() string {
	return in.pulsarReleaseName() + "-token-symmetric-key"
}

// pulsarTokenSecret names the Secret of a role's token, as the chart
// names it.
func (in *Install) pulsarTokenSecret(role string) string {
	return in.pulsarReleaseName() + "-token-" + role
}

// pulsarAuthValues are the chart values that turn on token authentication
// and authorization with the two superuser roles. The chart (4.1 and
// later) takes no auth.authentication.provider.
func pulsarAuthValues() map[string]any {
	const enabled = "enabled"
	return map[string]any{
		"authentication": map[string]any{
			enabled: true,
			"jwt":   map[string]any{enabled: true, "usingSecretKey": true},
		},
		"authorization": map[string]any{enabled: true},
		"superUsers": map[string]any{
			"broker": pulsarRoleBroker, "client": pulsarRoleArmada, "proxy": "", "manager": "",
		},
		// No proxy runs: no proxy role.
		"useProxyRoles": false,
	}
}

// pulsarAuth composes the in-cluster Pulsar's key and token Secrets from
// the generated key.
func (r *renderer) pulsarAuth() error {
	in := r.in
	key, ok := r.passwords[pulsarTokenKey]
	if !ok || key == "" {
		return errors.New("cannot compose the Pulsar token Secrets: no signing key was generated")
	}
	r.add(keyPulsarKeySecret, in.opaqueSecret(in.pulsarKeySecret(), "pulsar", map[string][]byte{pulsarSecretKeyKey: []byte(key)}), r.exists(keyPulsarKeySecret))
	for _, role := range []string{pulsarRoleArmada, pulsarRoleBroker} {
		k := keyPulsarTokenPfx + role
		token := PulsarToken([]byte(key), role)
		r.add(k, in.opaqueSecret(in.pulsarTokenSecret(role), "pulsar", map[string][]byte{pulsarTokenSecretK: []byte(token)}), r.exists(k))
	}
	return nil
}

// opaqueSecret is an Opaque Secret in Armada's namespace.
func (in *Install) opaqueSecret(name, component string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(name, component),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
