package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// withIssuer sets spec.tls.issuerRef.
func withIssuer(ref v1alpha1.IssuerRef) func(*v1alpha1.ArmadaSpec) {
	return func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{IssuerRef: &ref} }
}

// certReady is an observation of every Certificate Ready at a revision.
func certReady(t *testing.T, s v1alpha1.ArmadaSpec, rev int64) Observed {
	t.Helper()
	o := Observed{Jobs: migrated(t, s), Ready: map[string]bool{}, CertRevisions: map[string]int64{}}
	for _, c := range []string{"server", "scheduler", "lookout"} {
		o.Ready[certificateKey(c)] = true
		o.CertRevisions[certificateKey(c)] = rev
	}
	return o
}

// TestCertificate proves the Certificate composed for each TLS server: its
// issuer, the names its generated certificate would carry, and the key
// and renewal settings.
func TestCertificate(t *testing.T) {
	names := func(c string) []any {
		in, _ := New(claimed(spec()))
		names := in.tlsDNSNames(componentByName(c))
		out := make([]any, 0, len(names))
		for _, n := range names {
			out = append(out, n)
		}
		return out
	}
	cases := map[string]struct {
		reason    string
		ref       v1alpha1.IssuerRef
		component string
		want      map[string]any
	}{
		"ServerIssuerDefaults": {
			reason:    "An Issuer by name alone gets cert-manager's kind and group; the server's names are its Service's.",
			ref:       v1alpha1.IssuerRef{Name: "armada-ca"},
			component: "server",
			want: map[string]any{
				"secretName": "armada-server-tls", "dnsNames": names("server"),
				"duration": "2160h0m0s", "renewBefore": "720h0m0s",
				"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "encoding": "PKCS8", "rotationPolicy": "Always"},
				"usages":     []any{"digital signature", "server auth"},
				"issuerRef":  map[string]any{"name": "armada-ca", "kind": "Issuer", "group": "cert-manager.io"},
			},
		},
		"SchedulerClusterIssuer": {
			reason:    "The scheduler's Certificate also covers its pods under the headless Service, and names the ClusterIssuer.",
			ref:       v1alpha1.IssuerRef{Name: "corp", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			component: "scheduler",
			want: map[string]any{
				"secretName": "armada-scheduler-tls", "dnsNames": names("scheduler"),
				"duration": "2160h0m0s", "renewBefore": "720h0m0s",
				"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "encoding": "PKCS8", "rotationPolicy": "Always"},
				"usages":     []any{"digital signature", "server auth"},
				"issuerRef":  map[string]any{"name": "corp", "kind": "ClusterIssuer", "group": "cert-manager.io"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, spec(withIssuer(tc.ref)), Observed{})
			o := find(out, certificateKey(tc.component))
			if o == nil {
				t.Fatalf("%s\nno Certificate composed for %s", tc.reason, tc.component)
			}
			u := o.Object.(*unstructured.Unstructured)
			if u.GetAPIVersion() != "cert-manager.io/v1" || u.GetKind() != "Certificate" || u.GetName() != tc.want["secretName"] || u.GetNamespace() != "armada" {
				t.Errorf("%s\ngot %s %s/%s", tc.reason, u.GetAPIVersion()+" "+u.GetKind(), u.GetNamespace(), u.GetName())
			}
			if diff := cmp.Diff(tc.want, u.Object["spec"]); diff != "" {
				t.Errorf("%s\nspec (-want +got):\n%s", tc.reason, diff)
			}
			if o.Ready {
				t.Errorf("%s\nan unobserved Certificate is reported ready", tc.reason)
			}
		})
	}
}

func componentByName(name string) *component {
	for i := range components {
		if components[i].Name == name {
			return &components[i]
		}
	}
	return nil
}

// TestCertManagerWiring proves what each pod mounts with issuerRef: its
// own Certificate's Secret (certificate, key and CA) for a TLS server, the
// CA of the scheduler's for the executor, at the paths generated
// certificates use; no generated TLS Secret; provider-armada trusting the
// server's CA.
func TestCertManagerWiring(t *testing.T) {
	s := spec(withIssuer(v1alpha1.IssuerRef{Name: "armada-ca"}))
	out := render(t, s, certReady(t, s, 1))
	if o := find(out, keyTLS); o != nil {
		t.Errorf("the generated TLS Secret is composed with issuerRef: %s", o.Object.GetName())
	}
	type want struct {
		Secret      string
		Items       map[string]string
		SSLCertFile string
	}
	all := map[string]string{"ca.crt": "ca.crt", "tls.crt": "tls.crt", "tls.key": "tls.key"}
	cases := map[string]struct {
		reason string
		want   want
	}{
		"server":           {"The server mounts its own Certificate's Secret and trusts its CA.", want{"armada-server-tls", all, "/etc/armada/tls/ca.crt"}},
		"scheduler":        {"The scheduler mounts its own Certificate's Secret and trusts its CA.", want{"armada-scheduler-tls", all, "/etc/armada/tls/ca.crt"}},
		"executor-local":   {"The executor mounts only the CA of the scheduler it dials.", want{"armada-scheduler-tls", map[string]string{"ca.crt": "ca.crt"}, "/etc/armada/tls/ca.crt"}},
		"lookout":          {"Lookout mounts its own Certificate's Secret; it dials no TLS server, so it has no SSL_CERT_FILE.", want{"armada-lookout-tls", all, ""}},
		"lookout-ingester": {"The lookout ingester neither serves TLS nor dials a TLS server.", want{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			tpl := podTemplateOf(t, out, name)
			for _, v := range tpl.Spec.Volumes {
				if v.Name == tlsVolume && v.Secret != nil {
					got.Secret = v.Secret.SecretName
					got.Items = map[string]string{}
					for _, it := range v.Secret.Items {
						got.Items[it.Key] = it.Path
					}
				}
			}
			for _, e := range tpl.Spec.Containers[0].Env {
				if e.Name == "SSL_CERT_FILE" {
					got.SSLCertFile = e.Value
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	in, _ := New(claimed(s))
	if diff := cmp.Diff(&armadav1.SecretKeySelector{Name: "armada-server-tls", Key: "ca.crt"}, in.providerConfig().Spec.TLS.CASecretRef); diff != "" {
		t.Errorf("provider-armada's CA (-want +got):\n%s", diff)
	}
}

// TestCertManagerReadiness proves components wait for the Certificate
// they mount: not created until it is Ready, their status naming it, and
// a running workload kept while it is not.
func TestCertManagerReadiness(t *testing.T) {
	s := spec(withIssuer(v1alpha1.IssuerRef{Name: "armada-ca"}))
	running := func(o Observed) Observed {
		o.Workloads = map[string]Workload{}
		for _, n := range []string{"server", "scheduler", "executor-local", "lookout"} {
			o.Workloads[n] = Workload{Version: DefaultVersion, Ready: true}
		}
		return o
	}
	notReady := Observed{Jobs: migrated(t, s)}
	cases := map[string]struct {
		reason   string
		observed Observed
		// composed says, by instance, whether its workload is composed.
		composed map[string]bool
		// reasons are the components' status reasons.
		reasons map[string]string
	}{
		"NotObserved": {
			reason:   "Before cert-manager reports the Certificates Ready, nothing that mounts them is created.",
			observed: notReady,
			composed: map[string]bool{"server": false, "scheduler": false, "executor-local": false, "lookout": false, "lookout-ingester": true},
			reasons: map[string]string{
				"server":           "Waiting for the TLS Certificate armada-server-tls to become Ready",
				"scheduler":        "Waiting for the TLS Certificate armada-scheduler-tls to become Ready",
				"executor-local":   "Waiting for the TLS Certificate armada-scheduler-tls to become Ready",
				"lookout":          "Waiting for the TLS Certificate armada-lookout-tls to become Ready",
				"lookout-ingester": "Waiting for the workload to become available",
			},
		},
		"Ready": {
			reason:   "Ready Certificates let every workload be created.",
			observed: certReady(t, s, 1),
			composed: map[string]bool{"server": true, "scheduler": true, "executor-local": true, "lookout": true},
			reasons: map[string]string{
				"server": "Waiting for the workload to become available", "scheduler": "Waiting for the workload to become available",
				"executor-local": "Waiting for the workload to become available", "lookout": "Waiting for the workload to become available",
			},
		},
		"RunningNotReady": {
			reason:   "A running workload stays composed while its Certificate is not Ready (a renewal, a lost observation).",
			observed: running(notReady),
			composed: map[string]bool{"server": true, "scheduler": true, "executor-local": true, "lookout": true},
			reasons: map[string]string{
				"server":         "Waiting for the TLS Certificate armada-server-tls to become Ready",
				"scheduler":      "Waiting for the TLS Certificate armada-scheduler-tls to become Ready",
				"executor-local": "Waiting for the TLS Certificate armada-scheduler-tls to become Ready",
				"lookout":        "Waiting for the TLS Certificate armada-lookout-tls to become Ready",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, s, tc.observed)
			composed, reasons := map[string]bool{}, map[string]string{}
			for n := range tc.composed {
				composed[n] = find(out, n+keyWorkloadSuffix) != nil
				reasons[n] = out.Status.Components[n].Reason
			}
			if diff := cmp.Diff(tc.composed, composed); diff != "" {
				t.Errorf("%s\ncomposed workloads (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.reasons, reasons); diff != "" {
				t.Errorf("%s\nstatus reasons (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCertManagerRotation proves when pods roll under cert-manager: on a
// new revision of the Certificate they mount, and never because the
// revision is not observed.
func TestCertManagerRotation(t *testing.T) {
	s := spec(withIssuer(v1alpha1.IssuerRef{Name: "armada-ca"}))
	hashes := func(o Observed) map[string]string {
		out := render(t, s, o)
		m := map[string]string{}
		for _, n := range []string{"server", "scheduler", "executor-local"} {
			m[n] = podTemplateOf(t, out, n).Annotations[annotationConfigHash]
		}
		return m
	}
	rev1 := hashes(certReady(t, s, 1))
	// observedAt is an observation of the workloads as rendered at rev1,
	// running.
	observedAt := func(o Observed) Observed {
		o.Workloads = map[string]Workload{}
		for n, h := range rev1 {
			o.Workloads[n] = Workload{Version: DefaultVersion, Ready: true, ConfigHash: h}
		}
		return o
	}
	lost := observedAt(Observed{Jobs: migrated(t, s)})
	revLost := certReady(t, s, 1)
	delete(revLost.CertRevisions, certificateKey("server"))
	delete(revLost.CertRevisions, certificateKey("scheduler"))
	rev2 := certReady(t, s, 2)
	rev2Server := certReady(t, s, 1)
	rev2Server.CertRevisions[certificateKey("server")] = 2
	cases := map[string]struct {
		reason   string
		observed Observed
		// rolled says, by instance, whether its pod template's hash
		// differs from rev1's.
		rolled map[string]bool
	}{
		"SameRevision": {
			reason:   "Nothing rolls while the revisions stay.",
			observed: observedAt(certReady(t, s, 1)),
			rolled:   map[string]bool{"server": false, "scheduler": false, "executor-local": false},
		},
		"NewRevisions": {
			reason:   "A reissued Certificate (maybe a new CA in ca.crt) rolls every pod that mounts it.",
			observed: observedAt(rev2),
			rolled:   map[string]bool{"server": true, "scheduler": true, "executor-local": true},
		},
		"NewServerRevision": {
			reason:   "Only the pods mounting the reissued Certificate's Secret roll.",
			observed: observedAt(rev2Server),
			rolled:   map[string]bool{"server": true, "scheduler": false, "executor-local": false},
		},
		"CertificatesNotObserved": {
			reason:   "Losing sight of the Certificates keeps the running pod templates.",
			observed: lost,
			rolled:   map[string]bool{"server": false, "scheduler": false, "executor-local": false},
		},
		"RevisionsNotObserved": {
			reason:   "Ready Certificates without a revision keep the running pod templates.",
			observed: observedAt(revLost),
			rolled:   map[string]bool{"server": false, "scheduler": false, "executor-local": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := hashes(tc.observed)
			rolled := map[string]bool{}
			for n := range tc.rolled {
				rolled[n] = got[n] != rev1[n]
			}
			if diff := cmp.Diff(tc.rolled, rolled); diff != "" {
				t.Errorf("%s\nrolled (-want +got):\n%s\nrev1 %v\ngot  %v", tc.reason, diff, rev1, got)
			}
		})
	}
}

// TestObserveCertificate proves Observe reads a Certificate's readiness
// and revision.
func TestObserveCertificate(t *testing.T) {
	cert := func(status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate"}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	cases := map[string]struct {
		reason    string
		u         *unstructured.Unstructured
		wantReady bool
		wantRevs  map[string]int64
	}{
		"Issued": {
			reason:    "A Ready Certificate at revision 3 (numbers arrive as float64).",
			u:         cert(map[string]any{"revision": float64(3), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}),
			wantReady: true, wantRevs: map[string]int64{"tls-certificate-server": 3},
		},
		"Pending": {
			reason: "A Certificate not issued yet has no revision and is not ready.",
			u:      cert(map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Observe(map[string]*unstructured.Unstructured{"tls-certificate-server": tc.u})
			if got := o.Ready["tls-certificate-server"]; got != tc.wantReady {
				t.Errorf("%s\nReady: got %t, want %t", tc.reason, got, tc.wantReady)
			}
			if diff := cmp.Diff(tc.wantRevs, o.CertRevisions); diff != "" {
				t.Errorf("%s\nCertRevisions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestValidateIssuerRef proves the function refuses what the XRD refuses
// in spec.tls.issuerRef, naming the field.
func TestValidateIssuerRef(t *testing.T) {
	p := field.NewPath("spec", "tls", "issuerRef")
	cases := map[string]struct {
		reason string
		tls    *v1alpha1.TLS
		want   field.ErrorList
	}{
		"Valid": {
			reason: "A ClusterIssuer by name.",
			tls:    &v1alpha1.TLS{IssuerRef: &v1alpha1.IssuerRef{Name: "corp-ca", Kind: "ClusterIssuer"}},
		},
		"EmptyName": {
			reason: "An issuer needs a name.",
			tls:    &v1alpha1.TLS{IssuerRef: &v1alpha1.IssuerRef{}},
			want:   field.ErrorList{field.Required(p.Child("name"), "name the cert-manager Issuer or ClusterIssuer")},
		},
		"WrongKind": {
			reason: "Only Issuer and ClusterIssuer.",
			tls:    &v1alpha1.TLS{IssuerRef: &v1alpha1.IssuerRef{Name: "ca", Kind: "Certificate"}},
			want:   field.ErrorList{field.NotSupported(p.Child("kind"), "Certificate", issuerKinds)},
		},
		"TLSOff": {
			reason: "An issuer with TLS off would be silently ignored.",
			tls:    &v1alpha1.TLS{Enabled: ptr.To(false), IssuerRef: &v1alpha1.IssuerRef{Name: "ca"}},
			want:   field.ErrorList{field.Invalid(p, "ca", "needs spec.tls.enabled: true")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = tc.tls })
			_, errs := New(claimed(s))
			if diff := cmp.Diff(tc.want, errs); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
