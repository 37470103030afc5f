package armada

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// existing is an object found in the cluster with these labels and
// annotations.
func existing(labels, annotations map[string]string) metav1.Object {
	return &metav1.ObjectMeta{Name: "x", Labels: labels, Annotations: annotations}
}

func TestNewOwner(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     XR
		want   Owner
	}{
		"Claim": {
			reason: "A claimed XR's mark names the claim; Crossplane's label names the XR.",
			xr:     claimed(spec()),
			want:   Owner{Mark: "ArmadaClaim armada/armada", Composite: "armada-x7k2p"},
		},
		"Namespaced": {
			reason: "A namespaced XR's mark names it with its namespace; its name is not unique in the cluster.",
			xr:     namespacedXR(spec(), nil),
			want:   Owner{Mark: "Armada armada/armada"},
		},
		"Direct": {
			reason: "An XR created without a claim is named itself.",
			xr:     XR{Name: "direct", Spec: spec()},
			want:   Owner{Mark: "XArmada direct", Composite: "direct"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ownerOf(tc.xr)); diff != "" {
				t.Errorf("%s\nownerOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOwns(t *testing.T) {
	o := Owner{Mark: "ArmadaClaim team-a/armada", Composite: "armada-x7k2p"}
	type want struct {
		owned  bool
		holder string
	}
	cases := map[string]struct {
		reason string
		obj    metav1.Object
		want   want
	}{
		"Marked": {
			reason: "An object carrying the owner's mark is its own.",
			obj:    existing(nil, map[string]string{AnnotationOwner: "ArmadaClaim team-a/armada"}),
			want:   want{owned: true},
		},
		"ComposedBeforeMarks": {
			reason: "An object Crossplane composed for the owner's XR, before marks existed, is its own.",
			obj:    existing(map[string]string{xcrd.LabelKeyNamePrefixForComposed: "armada-x7k2p"}, nil),
			want:   want{owned: true},
		},
		"Unmarked": {
			reason: "An object nothing marks (the platform's, say) is nobody's the function knows.",
			obj:    existing(map[string]string{"team": "platform"}, nil),
			want:   want{},
		},
		"MarkedByAnother": {
			reason: "Another claim's mark names that claim.",
			obj:    existing(map[string]string{xcrd.LabelKeyNamePrefixForComposed: "armada-x7k2p"}, map[string]string{AnnotationOwner: "ArmadaClaim victim/armada"}),
			want:   want{holder: "ArmadaClaim victim/armada"},
		},
		"AnotherComposite": {
			reason: "Another XR's label names that XR.",
			obj:    existing(map[string]string{xcrd.LabelKeyNamePrefixForComposed: "other-y"}, nil),
			want:   want{holder: "composite resource other-y"},
		},
		"SameNameOtherNamespace": {
			reason: "A mark that only looks alike is not the owner's.",
			obj:    existing(nil, map[string]string{AnnotationOwner: "ArmadaClaim team-b/armada"}),
			want:   want{holder: "ArmadaClaim team-b/armada"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			owned, holder := o.Owns(tc.obj)
			if diff := cmp.Diff(tc.want, want{owned, holder}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nOwns(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckPriorityClasses(t *testing.T) {
	path := field.NewPath("spec", "scheduling", "priorityClasses")
	const def, pre = "armada-armada-0abc57-default", "armada-armada-0abc57-preemptible"
	cases := map[string]struct {
		reason   string
		existing map[string]metav1.Object
		composed []string
		want     field.ErrorList
	}{
		"NoneExist": {reason: "New names are free.", existing: map[string]metav1.Object{}},
		"Marked": {
			reason:   "Our own PriorityClasses are fine.",
			existing: map[string]metav1.Object{def: existing(nil, map[string]string{AnnotationOwner: "ArmadaClaim armada/armada"})},
		},
		"ComposedByThisXR": {
			reason:   "A PriorityClass Crossplane composed for this XR is ours.",
			existing: map[string]metav1.Object{def: existing(map[string]string{xcrd.LabelKeyNamePrefixForComposed: "armada-x7k2p"}, nil)},
		},
		"AlreadyComposed": {
			reason:   "A PriorityClass the XR already composes (through an Object, unmarked before marks) stays its own.",
			existing: map[string]metav1.Object{def: existing(nil, nil)},
			composed: []string{def},
		},
		"ExistsUnmarked": {
			reason:   "A PriorityClass that exists without this Armada's mark (a platform class) is refused, not adopted.",
			existing: map[string]metav1.Object{pre: existing(map[string]string{"owner": "platform"}, nil)},
			want:     field.ErrorList{field.Invalid(path.Index(1).Child("name"), pre, "")},
		},
		"OwnedByAnother": {
			reason:   "Another Armada's PriorityClass is refused with the field named.",
			existing: map[string]metav1.Object{pre: existing(map[string]string{xcrd.LabelKeyNamePrefixForComposed: "other-y"}, map[string]string{AnnotationOwner: "ArmadaClaim team-b/armada"})},
			want:     field.ErrorList{field.Invalid(path.Index(1).Child("name"), pre, "")},
		},
	}
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{def, pre}, in.PriorityClasses()); diff != "" {
		t.Errorf("PriorityClasses(): -want, +got:\n%s", diff)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := in.CheckPriorityClasses(tc.existing, tc.composed)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(field.Error{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nCheckPriorityClasses(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSecretInputs(t *testing.T) {
	p := field.NewPath("spec")
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   field.ErrorList
	}{
		"OwnSecrets": {
			reason: "Secrets of the tenant's own, even named like the install, are inputs.",
			spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Ingress = &v1alpha1.Ingress{GRPCHost: "g.example.com", RESTHost: "r.example.com", LookoutHost: "l.example.com", TLSSecretName: "armada-ingress-tls"}
			}),
		},
		"IngressServesTheCA": {
			reason: "ingress.tlsSecretName naming <name>-tls would hand the private CA's key to the Ingress controller.",
			spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Ingress = &v1alpha1.Ingress{GRPCHost: "g.example.com", RESTHost: "r.example.com", LookoutHost: "l.example.com", TLSSecretName: "armada-tls"}
			}),
			want: field.ErrorList{field.Invalid(p.Child("ingress", "tlsSecretName"), "armada-tls", "")},
		},
		"PasswordFromGenerated": {
			reason: "A backing-service password may not be read from the generated credentials.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.PasswordSecretRef.Name = "armada-credentials" }),
			want:   field.ErrorList{field.Invalid(p.Child("postgres", "passwordSecretRef", "name"), "armada-credentials", "")},
		},
		"RemoteIdentityGenerations": {
			reason: "A remote executor's identity Secret is refused at every generation: the one retiring and those to come, not only the current one.",
			spec: func() v1alpha1.ArmadaSpec {
				s := remoteSpec()
				s.Rotation = &v1alpha1.Rotation{Passwords: map[string]int32{"internal-executor-a": 1}}
				s.Postgres.PasswordSecretRef.Name = "armada-executor-a-identity"
				s.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "armada-executor-g-identity-r7", Key: "token"}
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "armada-executor-a-identity-rx"}}
				return s
			}(),
			want: field.ErrorList{
				field.Invalid(p.Child("postgres", "passwordSecretRef", "name"), "armada-executor-a-identity", ""),
				field.Invalid(p.Child("redis", "passwordSecretRef", "name"), "armada-executor-g-identity-r7", ""),
			},
		},
		"EveryField": {
			reason: "Every Secret input is checked, each refusal naming its field.",
			spec: spec(func(s *v1alpha1.ArmadaSpec) {
				s.Postgres.AdminSecretRef = &v1alpha1.LocalSecretRef{Name: "armada-provider-armada"}
				s.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "armada-server-config", Key: "k"}
				s.Pulsar.URL = "pulsar+ssl://pulsar:6651"
				s.Pulsar.TokenSecretRef = &v1alpha1.SecretKeyRef{Name: "armada-migrate-lookout-config", Key: "k"}
				s.Pulsar.CASecretRef = &v1alpha1.SecretKeyRef{Name: "armada-scheduler-tls", Key: "ca.crt"}
				s.ExecutorAPI = &v1alpha1.ExecutorAPI{CASecretRef: &v1alpha1.SecretKeyRef{Name: "armada-tls", Key: "ca.crt"}}
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}, {Name: "armada-credentials"}}
				s.Auth.OIDC = &v1alpha1.OIDC{ProviderURL: "https://login.example", ClientID: "lookout", CASecretRef: &v1alpha1.SecretKeyRef{Name: "armada-lookout-tls", Key: "ca.crt"}}
			}),
			want: field.ErrorList{
				field.Invalid(p.Child("auth", "oidc", "caSecretRef", "name"), "armada-lookout-tls", ""),
				field.Invalid(p.Child("executorApi", "caSecretRef", "name"), "armada-tls", ""),
				field.Invalid(p.Child("imagePullSecrets").Index(1).Child("name"), "armada-credentials", ""),
				field.Invalid(p.Child("postgres", "adminSecretRef", "name"), "armada-provider-armada", ""),
				field.Invalid(p.Child("pulsar", "caSecretRef", "name"), "armada-scheduler-tls", ""),
				field.Invalid(p.Child("pulsar", "tokenSecretRef", "name"), "armada-migrate-lookout-config", ""),
				field.Invalid(p.Child("redis", "passwordSecretRef", "name"), "armada-server-config", ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := New(claimed(tc.spec))
			if diff := cmp.Diff(tc.want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestComposedSecretsListed keeps composedSecrets complete: for specs with
// every backing-service mode, cert-manager and remote executors, rendered
// until everything is observed healthy, every Secret the install composes
// or has written in its namespace (Secrets, Certificates' secretName, an
// Object's connection Secret, CloudNativePG's app Secret) is listed.
func TestComposedSecretsListed(t *testing.T) {
	specs := map[string]v1alpha1.ArmadaSpec{
		"External": spec(),
		"InCluster": spec(func(s *v1alpha1.ArmadaSpec) {
			s.Postgres = v1alpha1.Postgres{Mode: modeInCluster}
			s.Redis = v1alpha1.Redis{Mode: modeInCluster}
			s.Pulsar = v1alpha1.Pulsar{Mode: modeInCluster}
			s.Queues = []v1alpha1.ArmadaQueue{{Name: "q", QueueParameters: armadav1.QueueParameters{PriorityFactor: "1"}}}
		}),
		"CertManagerRemote": func() v1alpha1.ArmadaSpec {
			s := remoteSpec()
			s.TLS = &v1alpha1.TLS{IssuerRef: &v1alpha1.IssuerRef{Name: "ca"}}
			return s
		}(),
	}
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			in, errs := New(claimed(s))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			listed := in.composedSecrets()
			written := map[string]bool{}
			o := Observed{}
			for range 4 {
				out, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("k"), "xr")})
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]*unstructured.Unstructured{}
				for _, obj := range out.Objects {
					u := healthy(t, obj)
					seen[obj.Key] = u
					for _, n := range secretsWritten(u, in.Namespace) {
						written[n] = true
					}
				}
				o = Observe(seen)
			}
			if len(written) < 3 {
				t.Fatalf("only %d Secrets written: the render did not progress", len(written))
			}
			for _, n := range slices.Sorted(maps.Keys(written)) {
				if _, ok := listed[n]; !ok {
					t.Errorf("Secret %s is composed but not in composedSecrets, so a tenant could name it as an input", n)
				}
			}
		})
	}
}

// healthy is a composed object as a healthy cluster reports it.
func healthy(t *testing.T, o Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	if status, ok := simulate.HealthyStatus(u, time.Unix(0, 0)); ok {
		u.Object["status"] = status
	}
	return u
}

// secretsWritten are the Secrets in namespace ns an object is or has
// written.
func secretsWritten(u *unstructured.Unstructured, ns string) []string {
	var out []string
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(u.Object, path...); return v }
	switch u.GetKind() {
	case kindSecret:
		if u.GetNamespace() == ns {
			out = append(out, u.GetName())
		}
	case "Certificate":
		out = append(out, str("spec", "secretName"))
	case "Object":
		if n := str("spec", "writeConnectionSecretToRef", "name"); n != "" {
			out = append(out, n)
		}
		if str("spec", "forProvider", "manifest", "kind") == "Cluster" && strings.Contains(str("spec", "forProvider", "manifest", "apiVersion"), "cnpg") {
			out = append(out, str("spec", "forProvider", "manifest", "metadata", "name")+"-app")
		}
	}
	return out
}
