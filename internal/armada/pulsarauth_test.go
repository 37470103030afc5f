package armada

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// verifyToken checks an HS256 JWT's signature with key, as Pulsar's
// AuthenticationProviderToken does, and returns its role (sub).
func verifyToken(t *testing.T, key []byte, token string) (string, bool) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	enc := base64.RawURLEncoding
	var header struct {
		Alg string `json:"alg"`
	}
	h, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(h, &header) != nil || header.Alg != "HS256" {
		return "", false
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return "", false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return "", false
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	c, err := enc.DecodeString(parts[1])
	if err != nil || json.Unmarshal(c, &claims) != nil {
		return "", false
	}
	return claims.Sub, claims.Sub != ""
}

// pulsarClientFiles are the token files each Pulsar client of a render
// reads, by pod: a component's pulsar.jwtTokenPath when its config turns
// authentication on, the topic-init Job's TOKEN_FILE; "" when the client
// presents no token.
func pulsarClientFiles(t *testing.T, out *Output) map[string]string {
	t.Helper()
	secrets := renderedSecrets(out)
	files := map[string]string{}
	for _, o := range out.Objects {
		var tpl *corev1.PodTemplateSpec
		switch obj := o.Object.(type) {
		case *appsv1.Deployment:
			tpl = &obj.Spec.Template
		case *appsv1.StatefulSet:
			tpl = &obj.Spec.Template
		case *batchv1.Job:
			tpl = &obj.Spec.Template
		}
		if tpl == nil {
			continue
		}
		pod := tpl.Labels[labelComponent]
		for _, e := range tpl.Spec.Containers[0].Env {
			if e.Name == "ADMIN_URL" {
				files[pod] = ""
			}
			if e.Name == "TOKEN_FILE" {
				files[pod] = e.Value
			}
		}
		for _, v := range tpl.Spec.Volumes {
			if v.Name != "config" {
				continue
			}
			var cfg struct {
				Pulsar *struct {
					URL                   string `json:"URL"`
					AuthenticationEnabled bool   `json:"authenticationEnabled"`
					AuthenticationType    string `json:"authenticationType"`
					JwtTokenPath          string `json:"jwtTokenPath"`
				} `json:"pulsar"`
			}
			if err := yaml.Unmarshal(secrets[v.Secret.SecretName].Data[configKey], &cfg); err != nil {
				t.Fatalf("%s: %v", pod, err)
			}
			if cfg.Pulsar == nil || cfg.Pulsar.URL == "" {
				continue
			}
			files[pod] = ""
			if cfg.Pulsar.AuthenticationEnabled && cfg.Pulsar.AuthenticationType == "JWT" {
				files[pod] = cfg.Pulsar.JwtTokenPath
			}
		}
	}
	return files
}

// mountedFile is the content of a file a pod reads from a mounted Secret.
func mountedFile(out *Output, pod, file string) ([]byte, bool) {
	secrets := renderedSecrets(out)
	for _, o := range out.Objects {
		var spec *corev1.PodSpec
		switch obj := o.Object.(type) {
		case *appsv1.Deployment:
			spec = &obj.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &obj.Spec.Template.Spec
		case *batchv1.Job:
			spec = &obj.Spec.Template.Spec
		default:
			continue
		}
		if o.Object.(interface{ GetLabels() map[string]string }).GetLabels()[labelComponent] != pod {
			continue
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			if path.Dir(file) != m.MountPath {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.Secret != nil && secrets[v.Secret.SecretName] != nil {
					b, ok := secrets[v.Secret.SecretName].Data[path.Base(file)]
					return b, ok
				}
			}
		}
	}
	return nil, false
}

// renderedSecrets are a render's Secrets by name.
func renderedSecrets(out *Output) map[string]*corev1.Secret {
	m := map[string]*corev1.Secret{}
	for _, o := range out.Objects {
		if s, ok := o.Object.(*corev1.Secret); ok {
			m[s.Name] = s
		}
	}
	return m
}

// TestInClusterPulsarTokenAuth checks, from the converged render of the
// all-in-cluster example, that the Pulsar chart's values turn on JWT
// authentication with a symmetric key and authorization, that the Secrets
// the chart's templates mount under the release's name exist and hold a
// key and a brokers' token it signed, and that every Pulsar client of the
// render (each component with a pulsar.URL, the topic-init Job) presents a
// token from a mounted Secret that the key signed for a superuser role.
func TestInClusterPulsarTokenAuth(t *testing.T) {
	_, out := converged(t, exampleSpecs(t, testutil.Example("all-in-cluster.yaml"))[0])
	rel := find(out, keyPulsarRelease)
	if rel == nil {
		t.Fatal("no Pulsar release composed")
	}
	u := rel.Object.(*unstructured.Unstructured)
	auth, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider", "values", "auth")
	flag := func(p ...string) bool { v, _, _ := unstructured.NestedBool(auth, p...); return v }
	for _, p := range [][]string{{"authentication", "enabled"}, {"authentication", "jwt", "enabled"}, {"authentication", "jwt", "usingSecretKey"}, {"authorization", "enabled"}} {
		if !flag(p...) {
			t.Errorf("the chart's values set auth.%s false or not at all", strings.Join(p, "."))
		}
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(auth, "authentication", "provider"); set {
		t.Error("the chart's values set auth.authentication.provider, which chart 4.1 and later refuse")
	}
	supers, _, _ := unstructured.NestedStringMap(auth, "superUsers")
	superuser := map[string]bool{}
	for _, r := range supers {
		if r != "" {
			superuser[r] = true
		}
	}
	secrets := renderedSecrets(out)
	keySecret := secrets[u.GetName()+"-token-symmetric-key"]
	if keySecret == nil {
		t.Fatalf("no Secret %s-token-symmetric-key, which the chart's brokers mount", u.GetName())
	}
	key := keySecret.Data["SECRETKEY"]
	if len(key) < 32 {
		t.Fatalf("the signing key has %d bytes; HS256 in Pulsar needs at least 32", len(key))
	}
	broker := secrets[u.GetName()+"-token-"+supers["broker"]]
	if broker == nil {
		t.Fatalf("no Secret %s-token-%s, the brokers' own token the chart mounts", u.GetName(), supers["broker"])
	}
	if role, ok := verifyToken(t, key, string(broker.Data["TOKEN"])); !ok || role != supers["broker"] {
		t.Errorf("the brokers' token verifies %t with role %q; want role %q", ok, role, supers["broker"])
	}
	clients := pulsarClientFiles(t, out)
	if len(clients) < 6 {
		t.Fatalf("only %d Pulsar clients found: %v", len(clients), clients)
	}
	for pod, file := range clients {
		if file == "" {
			t.Errorf("%s talks to Pulsar without a token", pod)
			continue
		}
		token, ok := mountedFile(out, pod, file)
		if !ok {
			t.Errorf("%s reads its token from %s, which no mounted Secret holds", pod, file)
			continue
		}
		if role, ok := verifyToken(t, key, string(bytes.TrimSpace(token))); !ok || !superuser[role] {
			t.Errorf("%s's token verifies %t with role %q; want a superuser role of %v", pod, ok, role, supers)
		}
	}
}

// TestPulsarKeyStable checks the signing key is generated once: a render
// observing the credentials Secret keeps the key and the tokens whatever
// the function's random key, and one that does not observe it derives
// another (so the first comparison can fail).
func TestPulsarKeyStable(t *testing.T) {
	s := exampleSpecs(t, testutil.Example("all-in-cluster.yaml"))[0]
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	renderWith := func(key string, o Observed) map[string]*corev1.Secret {
		t.Helper()
		out, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte(key), "xr")})
		if err != nil {
			t.Fatal(err)
		}
		return renderedSecrets(out)
	}
	first := renderWith("a", Observed{})
	seen := map[string]*unstructured.Unstructured{}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(first[in.credentialsSecret()])
	if err != nil {
		t.Fatal(err)
	}
	seen[keyCredentials] = &unstructured.Unstructured{Object: m}
	names := []string{in.pulsarKeySecret(), in.pulsarTokenSecret(pulsarRoleArmada), in.pulsarTokenSecret(pulsarRoleBroker)}
	data := func(s map[string]*corev1.Secret) map[string]map[string][]byte {
		out := map[string]map[string][]byte{}
		for _, n := range names {
			if s[n] == nil {
				t.Fatalf("no Secret %s", n)
			}
			out[n] = s[n].Data
		}
		return out
	}
	if diff := cmp.Diff(data(first), data(renderWith("b", Observe(seen)))); diff != "" {
		t.Errorf("with the credentials Secret observed, another random key changed the Pulsar Secrets (-first +second):\n%s", diff)
	}
	if cmp.Equal(data(first), data(renderWith("b", Observed{}))) {
		t.Error("without the credentials Secret observed, another random key derived the same Pulsar key")
	}
}

// TestPulsarValuesTheFunctionSets checks spec.pulsar.inCluster.values may
// not set what the function sets: authentication, names and labels.
func TestPulsarValuesTheFunctionSets(t *testing.T) {
	p := field.NewPath("spec", "pulsar", "inCluster", "values")
	inCluster := func(values string) v1alpha1.ArmadaSpec {
		return spec(func(s *v1alpha1.ArmadaSpec) {
			s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster, InCluster: &v1alpha1.PulsarInCluster{Values: &runtime.RawExtension{Raw: []byte(values)}}}
		})
	}
	cases := map[string]struct {
		reason string
		values string
		want   field.ErrorList
	}{
		"Allowed": {reason: "Other chart values are the user's.", values: `{"broker":{"replicaCount":2}}`},
		"Auth": {
			reason: "Turning authentication off, or changing its roles, is refused.",
			values: `{"auth":{"authentication":{"enabled":false}}}`,
			want:   field.ErrorList{field.Forbidden(p.Child("auth"), "")},
		},
		"Names": {
			reason: "The names and labels the Services and NetworkPolicies rely on are refused.",
			values: `{"fullnameOverride":"x","clusterName":"y","nameOverride":"z"}`,
			want:   field.ErrorList{field.Forbidden(p.Child("clusterName"), ""), field.Forbidden(p.Child("fullnameOverride"), ""), field.Forbidden(p.Child("nameOverride"), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := New(claimed(inCluster(tc.values)))
			if diff := cmp.Diff(tc.want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPulsarKeyNotRotated checks spec.rotation refuses the Pulsar signing
// key, which brokers read only when they start.
func TestPulsarKeyNotRotated(t *testing.T) {
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster}
		s.Rotation = &v1alpha1.Rotation{Passwords: map[string]int32{pulsarTokenKey: 1}}
	})
	_, errs := New(claimed(s))
	want := field.ErrorList{field.NotSupported[string](field.NewPath("spec", "rotation", "passwords").Key(pulsarTokenKey), pulsarTokenKey, nil)}
	if diff := cmp.Diff(want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")); diff != "" {
		t.Errorf("New(...): -want, +got:\n%s", diff)
	}
}
