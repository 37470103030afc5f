package armada

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// tlsCreated is the XR creation time of the clock tests.
var tlsCreated = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const day = 24 * time.Hour

// renderTLSAt is renderTLS with the certificate clock at now.
func renderTLSAt(t *testing.T, observed map[string][]byte, now time.Time) (*Install, *Output) {
	t.Helper()
	s := spec(withTLS)
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	out, err := Render(in, Options{Observed: Observed{Jobs: migrated(t, s), TLS: observed}, Rand: KeyedRand([]byte("k"), "xr"), Created: tlsCreated, Now: now})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	return in, out
}

// servingNames are the serving certificates of spec(withTLS), with a name
// each is dialled by.
func servingNames(in *Install) map[string]string {
	return map[string]string{
		"server": in.serviceHost("server"), "scheduler": in.serviceHost("scheduler"), "lookout": in.serviceHost("lookout"),
	}
}

// verifyAt verifies every serving certificate of data for the name it is
// dialled by, trusting only data's CA bundle (ca.crt), at now; it returns each failure.
func verifyAt(t *testing.T, in *Install, data map[string][]byte, now time.Time) []string {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[tlsCAFile]) {
		t.Fatal("no CA in ca.crt")
	}
	var errs []string
	for name, host := range servingNames(in) {
		leaf := certOf(t, data[name+".crt"])
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
			errs = append(errs, name+": "+err.Error())
		}
		if life := leaf.NotAfter.Sub(leaf.NotBefore); life > tlsLeafValidity {
			errs = append(errs, name+": valid for "+life.String()+", more than a year")
		}
	}
	return errs
}

// TestTLSElevenYears proves that rendering with a clock eleven years after
// the XR's creation gives a CA and serving certificates valid then, both
// from nothing and from the Secret observed at creation (whose
// certificates and CA are long expired), each serving certificate for a
// year at most.
func TestTLSElevenYears(t *testing.T) {
	later := tlsCreated.Add(11 * 365 * day)
	in, first := renderTLSAt(t, nil, tlsCreated)
	cases := map[string]struct {
		reason   string
		observed map[string][]byte
	}{
		"Fresh":    {"A first render eleven years on issues certificates valid then.", nil},
		"Observed": {"The Secret observed at creation is replaced: its CA and certificates are expired.", tlsData(first)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLSAt(t, tc.observed, later)
			data := tlsData(out)
			if errs := verifyAt(t, in, data, later); len(errs) > 0 {
				t.Errorf("%s\nat %s:\n%s", tc.reason, later, strings.Join(errs, "\n"))
			}
			ca := certOf(t, data[tlsCAFile])
			if later.Before(ca.NotBefore) || !later.Before(ca.NotAfter) {
				t.Errorf("%s\nthe CA is valid %s to %s, not at %s", tc.reason, ca.NotBefore, ca.NotAfter, later)
			}
		})
	}
}

// TestTLSRenewal proves when observed certificates are kept and when
// re-issued, and that a renewal rolls exactly the pods that mount a
// renewed file.
func TestTLSRenewal(t *testing.T) {
	in, first := renderTLSAt(t, nil, tlsCreated)
	observed := tlsData(first)
	// The server's certificate from another CA.
	_, other := renderTLS(t, spec(withTLS), "other", nil, tlsCreated)
	foreign := maps.Clone(observed)
	foreign["server.crt"], foreign["server.key"] = tlsData(other)["server.crt"], tlsData(other)["server.key"]
	renewal := tlsCreated.Add(tlsLeafStep)
	cases := map[string]struct {
		reason   string
		observed map[string][]byte
		now      time.Time
		// renewed are the keys whose bytes change.
		renewed []string
		// rolled are the instances whose pod template changes from the
		// render at creation; nil when the observation is not that
		// render's.
		rolled []string
	}{
		"Kept": {
			reason:   "Before the renewal point everything observed is kept.",
			observed: observed, now: renewal.Add(-time.Minute),
			rolled: []string{},
		},
		"Renewed": {
			reason:   "At two thirds of their life the serving certificates are renewed, the CA kept: only the pods mounting a serving certificate roll.",
			observed: observed, now: renewal,
			renewed: []string{"binoculars.crt", "binoculars.key", "lookout.crt", "lookout.key", "scheduler.crt", "scheduler.key", "server.crt", "server.key"},
			rolled:  []string{"binoculars", "lookout", "scheduler", "server"},
		},
		"OtherCA": {
			reason:   "A serving certificate not signed by the current CA is re-issued, alone.",
			observed: foreign, now: tlsCreated.Add(day),
			renewed: []string{"server.crt", "server.key"},
		},
		"CAHalfLife": {
			reason: "At half its life a new CA joins the trust bundle (its key waiting in ca-next.key; the rest of the rollover: TestCARollover); " +
				"the expired serving certificates are renewed under the old CA, which still signs: every pod using TLS rolls.",
			observed: observed, now: tlsCreated.Add(tlsCAStep),
			renewed: []string{"binoculars.crt", "binoculars.key", "ca-next.key", "ca.crt", "lookout.crt", "lookout.key", "scheduler.crt", "scheduler.key", "server.crt", "server.key"},
			rolled:  []string{"binoculars", "executor-local", "lookout", "scheduler", "server"},
		},
	}
	base := map[string]string{}
	for _, n := range []string{"server", "scheduler", "lookout", "executor-local", "binoculars", "lookout-ingester", "event-ingester", "scheduler-ingester"} {
		base[n] = podTemplateOf(t, first, n).Annotations[annotationConfigHash]
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLSAt(t, tc.observed, tc.now)
			data := tlsData(out)
			renewed := []string{}
			for _, k := range keysOf(data) {
				if !bytes.Equal(data[k], tc.observed[k]) {
					renewed = append(renewed, k)
				}
			}
			if diff := cmp.Diff(append([]string{}, tc.renewed...), renewed); diff != "" {
				t.Errorf("%s\nrenewed keys (-want +got):\n%s", tc.reason, diff)
			}
			if errs := verifyAt(t, in, data, tc.now); len(errs) > 0 {
				t.Errorf("%s\nnot valid at %s:\n%s", tc.reason, tc.now, strings.Join(errs, "\n"))
			}
			if tc.rolled == nil {
				return
			}
			rolled := []string{}
			for _, n := range keysOfStrings(base) {
				if podTemplateOf(t, out, n).Annotations[annotationConfigHash] != base[n] {
					rolled = append(rolled, n)
				}
			}
			if diff := cmp.Diff(append([]string{}, tc.rolled...), rolled); diff != "" {
				t.Errorf("%s\nrolled pods (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func keysOfStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTLSWindowDeterministic proves the output depends on the clock only
// through its window: two renders from nothing in the same window are
// byte-identical, the next window's differ, and their validity is the
// window's.
func TestTLSWindowDeterministic(t *testing.T) {
	_, a := renderTLSAt(t, nil, tlsCreated.Add(10*day))
	_, b := renderTLSAt(t, nil, tlsCreated.Add(tlsLeafStep-day))
	_, c := renderTLSAt(t, nil, tlsCreated.Add(tlsLeafStep+day))
	if diff := cmp.Diff(tlsData(a), tlsData(b)); diff != "" {
		t.Errorf("two renders in the same window differ (-a +b):\n%s", diff)
	}
	if bytes.Equal(tlsData(a)["server.crt"], tlsData(c)["server.crt"]) || bytes.Equal(tlsData(a)["server.key"], tlsData(c)["server.key"]) {
		t.Error("the next window keeps the same serving certificate or key")
	}
	leaf := certOf(t, tlsData(c)["server.crt"])
	if want := tlsCreated.Add(tlsLeafStep); !leaf.NotBefore.Equal(want) || !leaf.NotAfter.Equal(want.Add(tlsLeafValidity)) {
		t.Errorf("second window's certificate is valid %s to %s; want %s to %s", leaf.NotBefore, leaf.NotAfter, want, want.Add(tlsLeafValidity))
	}
}

// TestTLSNameConstraints proves the CA can vouch only for the Armada's
// Service names: a certificate its own key signs for a public name, or a
// name in another namespace, is refused by a client trusting it, while
// every composed name verifies (TestTLSCertificates handshakes them).
func TestTLSNameConstraints(t *testing.T) {
	now := tlsCreated.Add(day)
	in, out := renderTLSAt(t, nil, now)
	data := tlsData(out)
	ca, caKey, ok := parsePair(nil, data[tlsCAFile], data[tlsCAKey])
	if !ok {
		t.Fatal("no CA in the TLS Secret")
	}
	want := []string{"armada-binoculars", "armada-binoculars.armada", "armada-lookout", "armada-lookout.armada", "armada-scheduler", "armada-scheduler.armada", "armada-server", "armada-server.armada", "armada.svc"}
	if diff := cmp.Diff(want, ca.PermittedDNSDomains); diff != "" || !ca.PermittedDNSDomainsCritical {
		t.Errorf("CA name constraints (critical %t) (-want +got):\n%s", ca.PermittedDNSDomainsCritical, diff)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	cases := map[string]struct {
		reason string
		name   string
		ok     bool
	}{
		"Public":       {"A public name is outside the constraints.", "www.example.com", false},
		"NamespaceTLD": {"A name under a TLD spelled like the namespace is outside them.", "evil.armada", false},
		"OtherNS":      {"Another namespace's Service is outside them.", "kube-dns.kube-system.svc", false},
		"OwnService":   {"A Service of this namespace is inside them.", in.serviceHost("server"), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pub, _, err := ed25519.GenerateKey(nil)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{
				SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: tc.name}, DNSNames: []string{tc.name},
				NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			}
			der, err := x509.CreateCertificate(nil, tmpl, ca, pub, caKey)
			if err != nil {
				t.Fatal(err)
			}
			leaf := certOf(t, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
			_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.name, CurrentTime: now})
			if (err == nil) != tc.ok {
				t.Errorf("%s\n%s: verify error %v, want ok %t", tc.reason, tc.name, err, tc.ok)
			}
		})
	}
}

// TestTLSStatus proves the claim reports when the CA and the first
// serving certificate expire.
func TestTLSStatus(t *testing.T) {
	now := tlsCreated.Add(tlsLeafStep + day)
	_, out := renderTLSAt(t, nil, now)
	got := out.Status.TLS
	if got == nil {
		t.Fatal("no status.tls with generated certificates")
	}
	want := v1alpha1.TLSStatus{}
	want.NotAfter.Time = tlsCreated.Add(tlsLeafStep + tlsLeafValidity)
	want.CANotAfter.Time = tlsCreated.Add(tlsCAValidity)
	if !got.NotAfter.Equal(&want.NotAfter) || !got.CANotAfter.Equal(&want.CANotAfter) {
		t.Errorf("status.tls = notAfter %s, caNotAfter %s; want %s, %s", got.NotAfter, got.CANotAfter, want.NotAfter, want.CANotAfter)
	}

	// Certificates kept from the observed Secret count as issued ones do.
	_, first := renderTLSAt(t, nil, tlsCreated.Add(day))
	_, kept := renderTLSAt(t, tlsData(first), tlsCreated.Add(2*day))
	if diff := cmp.Diff(tlsData(first), tlsData(kept)); diff != "" {
		t.Fatalf("a day later, the TLS Secret changed (-first, +later); want every certificate kept:\n%s", diff)
	}
	if want := tlsCreated.Add(tlsLeafValidity); !kept.Status.TLS.NotAfter.Time.Equal(want) {
		t.Errorf("status.tls.notAfter with kept certificates = %s; want %s", kept.Status.TLS.NotAfter, want)
	}
}
