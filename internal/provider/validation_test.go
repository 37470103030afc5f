package provider_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// testValidation checks that the real API server enforces the CRDs'
// OpenAPI and CEL rules (it also proves it accepted their CEL cost, since
// the CRDs were Established).
func testValidation(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	ns := "validation"
	e.create(ctx, t, &corev1Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	queue := func(mutate func(*armadav1.QueueParameters)) client.Object {
		p := armadav1.QueueParameters{PriorityFactor: "1"}
		mutate(&p)
		return newQueue(ns, "q", p)
	}
	pc := func(mutate func(*armadav1.ProviderConfigSpec)) client.Object {
		s := providerConfigSpec("armada:50051", "")
		mutate(&s)
		return &armadav1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pc"}, Spec: s}
	}
	cases := map[string]struct {
		reason string
		obj    client.Object
		// err is a substring of the API server's refusal; empty means it
		// accepts the object. Creates are dry runs, so nothing is stored.
		err string
	}{
		"PriorityFactorBelowOne": {
			reason: "Armada rejects priority factors below 1.",
			obj:    queue(func(p *armadav1.QueueParameters) { p.PriorityFactor = "0.99" }),
			err:    "spec.forProvider.priorityFactor",
		},
		"PriorityFactorDecimal": {
			reason: "A decimal factor of at least 1 is fine.",
			obj:    queue(func(p *armadav1.QueueParameters) { p.PriorityFactor = "12.75" }),
		},
		"FractionAboveOne": {
			reason: "Resource fractions are within [0, 1].",
			obj: queue(func(p *armadav1.QueueParameters) {
				p.ResourceLimitsByPriorityClassName = map[string]armadav1.PriorityClassResourceLimits{
					"pc": {MaximumResourceFraction: map[string]armadav1.Fraction{"cpu": "1.01"}},
				}
			}),
			err: "maximumResourceFraction.cpu",
		},
		"UnknownVerb": {
			reason: "Verbs are an enum.",
			obj: queue(func(p *armadav1.QueueParameters) {
				p.Permissions = []armadav1.QueuePermission{{
					Subjects: []armadav1.PermissionSubject{{Kind: armadav1.SubjectKindUser, Name: "a"}},
					Verbs:    []armadav1.PermissionVerb{"delete"},
				}}
			}),
			err: `Unsupported value: "delete"`,
		},
		"UnknownSubjectKind": {
			reason: "Subject kinds are User or Group.",
			obj: queue(func(p *armadav1.QueueParameters) {
				p.Permissions = []armadav1.QueuePermission{{
					Subjects: []armadav1.PermissionSubject{{Kind: "Robot", Name: "a"}},
					Verbs:    []armadav1.PermissionVerb{armadav1.VerbWatch},
				}}
			}),
			err: `Unsupported value: "Robot"`,
		},
		"EmptyLabelValue": {
			reason: "Armada rejects empty label values.",
			obj:    queue(func(p *armadav1.QueueParameters) { p.Labels = map[string]string{"k": ""} }),
			err:    "label keys and values must be",
		},
		"InsecureWithCA": {
			reason: "Plaintext and a CA contradict each other.",
			obj: pc(func(s *armadav1.ProviderConfigSpec) {
				s.TLS.CASecretRef = &armadav1.SecretKeySelector{Name: "ca", Key: "ca.crt"}
			}),
			err: "set either insecure: true or caSecretRef, not both",
		},
		"SourceWithoutBlock": {
			reason: "The credentials block must match the source.",
			obj:    pc(func(s *armadav1.ProviderConfigSpec) { s.Credentials.Source = armadav1.CredentialsBearerToken }),
			err:    "set bearerToken exactly when source is BearerToken",
		},
		"EndpointWithoutPort": {
			reason: "The endpoint is host:port.",
			obj:    pc(func(s *armadav1.ProviderConfigSpec) { s.Endpoint = "https://armada" }),
			err:    "spec.endpoint",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := e.kube.Create(ctx, tc.obj, client.DryRunAll)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.err == "") != (got == "") || !strings.Contains(got, tc.err) {
				t.Errorf("%s\nCreate(...): want error containing %q, got %q", tc.reason, tc.err, got)
			}
		})
	}
}

// testExamples checks the API server accepts every object in
// examples/provider (dry run).
func testExamples(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	files, err := filepath.Glob(testutil.Example("provider", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cannot find examples/provider/*.yaml: %v", err)
	}
	e.create(ctx, t, &corev1Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	for _, f := range files {
		objs, err := manifest.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Errorf("%s holds no objects", filepath.Base(f))
		}
		for i, u := range objs {
			if err := e.kube.Create(ctx, u, client.DryRunAll); err != nil {
				t.Errorf("%s document %d (%s %s): %v", filepath.Base(f), i, u.GetKind(), u.GetName(), err)
			}
		}
	}
}
