package armada

import (
	"bytes"
	"crypto/x509"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestCARollover walks a CA rotation (spec.rotation.ca) through its three
// steps, each render observing the last one's objects with healthy
// workloads (pods rolled), and proves no client and server pair stops
// trusting each other: while both CAs are in ca.crt a client trusting it
// verifies a serving certificate of the old CA and one of the new; once
// the old CA is retired only the new one's. A step waits while a workload
// still runs pods of the Secret before it. Each step rolls exactly the pods
// whose files changed.
func TestCARollover(t *testing.T) {
	now := tlsCreated.Add(day)
	base := spec(withTLS)
	rotatedSpec := *base.DeepCopy()
	rotatedSpec.Rotation = &v1alpha1.Rotation{CA: 1}
	in, _ := New(claimed(base))
	host := in.serviceHost("server")
	step := func(s v1alpha1.ArmadaSpec, seen map[string]*unstructured.Unstructured) *Output {
		t.Helper()
		o := Observed{Jobs: migrated(t, s)}
		if seen != nil {
			o = Observe(seen)
			o.Jobs = migrated(t, s)
		}
		in, errs := New(claimed(s))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		out, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("k"), "xr"), Created: tlsCreated, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	healthy := func(out *Output) map[string]*unstructured.Unstructured { return seenAll(t, out, true) }
	// verifies says which serving certificates a client trusting ca.crt
	// accepts for the server's name.
	verifies := func(bundle []byte, leaves ...[]byte) []bool {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(bundle) {
			t.Fatal("ca.crt holds no certificate")
		}
		out := make([]bool, 0, len(leaves))
		for _, l := range leaves {
			_, err := certOf(t, l).Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now})
			out = append(out, err == nil)
		}
		return out
	}
	rolled := func(a, b *Output) []string {
		var out []string
		ta, tb := podTemplates(a), podTemplates(b)
		for _, k := range slices.Sorted(maps.Keys(ta)) {
			if ta[k].Annotations[annotationConfigHash] != tb[k].Annotations[annotationConfigHash] {
				out = append(out, k)
			}
		}
		return out
	}
	servers := []string{"binoculars-workload", "lookout-workload", "scheduler-workload", "server-workload"}
	mountsCA := []string{"binoculars-workload", "executor-local-workload", "lookout-workload", "scheduler-workload", "server-workload"}

	steady := step(base, healthy(step(base, nil)))
	old := tlsData(steady)
	if n := len(pemCertificates(old[tlsCAFile])); n != 1 {
		t.Fatalf("before the rotation ca.crt holds %d certificates, want 1", n)
	}

	// 1. Introduce: both CAs trusted, the old one still signs.
	intro := step(rotatedSpec, healthy(steady))
	d1 := tlsData(intro)
	if n := len(pemCertificates(d1[tlsCAFile])); n != 2 || len(d1[tlsCANextKey]) == 0 {
		t.Fatalf("introduce: ca.crt holds %d certificates and ca-next.key %d bytes, want 2 and the new CA's key", n, len(d1[tlsCANextKey]))
	}
	for _, k := range []string{tlsCAKey, "server.crt", "server.key"} {
		if !bytes.Equal(old[k], d1[k]) {
			t.Errorf("introduce: %s changed; the old CA signs until every pod trusts the new one", k)
		}
	}
	if diff := cmp.Diff(mountsCA, rolled(steady, intro)); diff != "" {
		t.Errorf("introduce rolls every pod mounting ca.crt (-want +got):\n%s", diff)
	}
	if again := tlsData(step(rotatedSpec, healthy(steady))); !cmp.Equal(d1, again) {
		t.Error("introduce: two renders of the same observation differ")
	}

	// Not rolled yet: the Secret is observed, the workloads still run the
	// pods of the one before. Nothing moves on.
	waiting := healthy(steady)
	waiting[keyTLS] = healthy(intro)[keyTLS]
	if diff := cmp.Diff(d1, tlsData(step(rotatedSpec, waiting))); diff != "" {
		t.Errorf("introduce: moved on before the pods rolled (-want +got):\n%s", diff)
	}

	// 2. Switch: the new CA signs; ca.crt as it was; new serving
	// certificates. A client trusting the bundle accepts the old
	// certificate and the new.
	sw := step(rotatedSpec, healthy(intro))
	d2 := tlsData(sw)
	if !bytes.Equal(d2[tlsCAKey], d1[tlsCANextKey]) || len(d2[tlsCANextKey]) != 0 {
		t.Errorf("switch: ca.key is not the incoming CA's key, or ca-next.key is left (%d bytes)", len(d2[tlsCANextKey]))
	}
	if !bytes.Equal(d1[tlsCAFile], d2[tlsCAFile]) {
		t.Error("switch: ca.crt changed; it must stay as it was so that clients do not roll")
	}
	if bytes.Equal(old["server.crt"], d2["server.crt"]) {
		t.Fatal("switch: the server's certificate was not re-issued under the new CA")
	}
	if diff := cmp.Diff([]bool{true, true}, verifies(d2[tlsCAFile], old["server.crt"], d2["server.crt"])); diff != "" {
		t.Errorf("during the rollover a client trusting ca.crt accepts [old-CA certificate, new-CA certificate] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(servers, rolled(intro, sw)); diff != "" {
		t.Errorf("switch rolls only the servers (-want +got):\n%s", diff)
	}

	// 3. Retire: only the new CA, once the servers run the new
	// certificates.
	waiting = healthy(intro)
	waiting[keyTLS] = healthy(sw)[keyTLS]
	if diff := cmp.Diff(d2, tlsData(step(rotatedSpec, waiting))); diff != "" {
		t.Errorf("retire: the old CA left ca.crt before the servers rolled (-want +got):\n%s", diff)
	}
	done := step(rotatedSpec, healthy(sw))
	d3 := tlsData(done)
	if n := len(pemCertificates(d3[tlsCAFile])); n != 1 {
		t.Errorf("retire: ca.crt holds %d certificates, want the new CA alone", n)
	}
	if diff := cmp.Diff([]bool{false, true}, verifies(d3[tlsCAFile], old["server.crt"], d3["server.crt"])); diff != "" {
		t.Errorf("after the rollover a client trusting ca.crt accepts [old-CA certificate, new-CA certificate] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(mountsCA, rolled(sw, done)); diff != "" {
		t.Errorf("retire rolls every pod mounting ca.crt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(d3, tlsData(step(rotatedSpec, healthy(done)))); diff != "" {
		t.Errorf("after the rollover the next render changed the TLS Secret (-want +got):\n%s", diff)
	}
}
