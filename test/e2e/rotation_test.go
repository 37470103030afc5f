package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// renewalOffset moves the function's certificate clock past the serving
// certificates' renewal point (two thirds of their year) but not the CA's
// (five years): the second leaf window.
const renewalOffset = 250 * 24 * time.Hour

// TestCertRenewal brings a running Armada's generated certificates to
// their renewal point on the real control plane: function-armada is
// restarted with --cert-clock-offset, as if 250 days had passed. The TLS
// Secret gets new serving certificates under the same CA, exactly the pods
// that mount a serving certificate roll (the CA's clients do not), and a
// TLS client trusting the composed CA accepts each new certificate for its
// Service name. Simulated: no kubelet runs, so "roll" is the pod template
// change a Deployment or StatefulSet controller acts on, and the handshake
// is made against a Go TLS server serving the composed certificate.
func TestCertRenewal(t *testing.T) {
	ns := "e2e-renew"
	claim := install(t, "minimal", ns)
	converge(t, claim)
	before := secretData(t, ns, "tls")
	if len(before[caCertKey]) == 0 {
		t.Fatalf("no CA in the TLS Secret of %s: keys %v", ns, slices.Sorted(maps.Keys(before)))
	}
	tplBefore := podTemplates(t, ns)

	ctx := context.Background()
	start := time.Now()
	if err := cp.RestartFunction(ctx, "--cert-clock-offset="+renewalOffset.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.RestartFunction(ctx); err != nil {
			t.Errorf("cannot restart function-armada without its clock offset: %v", err)
		}
	})
	touchXR(t, claim)
	var after map[string][]byte
	d := waitFor(t, "serving certificates renewed", func() (bool, string) {
		after = secretData(t, ns, "tls")
		for _, k := range leafKeys(before) {
			if bytes.Equal(before[k], after[k]) {
				return false, k + " unchanged"
			}
		}
		return true, ""
	})
	t.Logf("serving certificates renewed %s after the clock moved on (%s after the function restarted)", d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	converge(t, claim)
	settled(t, claim)
	after = secretData(t, ns, "tls")

	for _, k := range []string{caCertKey, "ca.key"} {
		if !bytes.Equal(before[k], after[k]) {
			t.Errorf("%s changed on a serving certificate renewal: the CA lasts five years more", k)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(after[caCertKey]) {
		t.Fatal("cannot parse the composed ca.crt")
	}
	leaves := leafKeys(after)
	if len(leaves) < 3 {
		t.Fatalf("%d serving certificates, want the server's, scheduler's and Lookout's at least: %v", len(leaves), leaves)
	}
	refused := 0
	for _, k := range leaves {
		name := strings.TrimSuffix(k, ".crt")
		was, now := parseCert(t, before[k]), parseCert(t, after[k])
		if !now.NotBefore.After(was.NotBefore) || !now.NotAfter.After(was.NotAfter) {
			t.Errorf("%s: the renewed certificate is valid %s to %s, not later than the old one (%s to %s)", k, now.NotBefore, now.NotAfter, was.NotBefore, was.NotAfter)
		}
		// Its Service's .svc name, as in-cluster clients dial it.
		if !handshake(t, roots, after[k], after[name+".key"], now.DNSNames[2]) {
			refused++
		}
	}

	tplAfter := podTemplates(t, ns)
	rolled := 0
	for _, k := range slices.Sorted(maps.Keys(tplBefore)) {
		changed := !bytes.Equal(tplBefore[k].json, tplAfter[k].json)
		if want := tplBefore[k].mountsLeaf; changed != want {
			t.Errorf("%s: pod template changed = %t, want %t (it mounts a serving certificate: %t)", k, changed, want, want)
		}
		if changed {
			rolled++
		}
	}
	if rolled == 0 || rolled == len(tplBefore) {
		t.Errorf("%d of %d workloads rolled, want exactly those serving TLS", rolled, len(tplBefore))
	}
	t.Logf("%d of %d workloads rolled (those that mount a serving certificate); %d of %d renewed certificates accepted by a client trusting the CA", rolled, len(tplBefore), len(leaves)-refused, len(leaves))
}

// caCertKey is the CA's key in the TLS Secret.
const caCertKey = "ca.crt"

// leafKeys are the serving certificates' keys of a TLS Secret's data.
func leafKeys(data map[string][]byte) []string {
	var out []string
	for k := range data {
		if strings.HasSuffix(k, ".crt") && k != caCertKey {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("not a PEM certificate")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handshake serves a certificate on a loopback port and dials it by name,
// trusting roots, at the function's shifted time: it fails the test and
// returns false if the client refuses it.
func handshake(t *testing.T, roots *x509.CertPool, certPEM, keyPEM []byte, name string) bool {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	shifted := func() time.Time { return time.Now().Add(renewalOffset) }
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck // A test listener.
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_ = c.(*tls.Conn).HandshakeContext(context.Background())
		_ = c.Close()
	}()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12, Time: shifted}}
	c, err := d.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Errorf("a client trusting the composed CA refuses the certificate for %s: %v", name, err)
		return false
	}
	_ = c.Close()
	return true
}

// template is a workload's pod template, and whether it mounts a serving
// certificate from the TLS Secret.
type template struct {
	json       []byte
	mountsLeaf bool
}

// podTemplates are the pod templates of the Deployments and StatefulSets
// in ns, by kind and name.
func podTemplates(t *testing.T, ns string) map[string]template {
	t.Helper()
	ctx := context.Background()
	out := map[string]template{}
	add := func(kind, name string, tpl corev1.PodTemplateSpec) {
		b, err := json.Marshal(tpl)
		if err != nil {
			t.Fatal(err)
		}
		leaf := false
		for _, v := range tpl.Spec.Volumes {
			if v.Secret == nil || !strings.HasSuffix(v.Secret.SecretName, "-tls") {
				continue
			}
			for _, it := range v.Secret.Items {
				leaf = leaf || it.Key != caCertKey
			}
		}
		out[kind+" "+name] = template{json: b, mountsLeaf: leaf}
	}
	ds := &appsv1.DeploymentList{}
	ss := &appsv1.StatefulSetList{}
	if err := kube().List(ctx, ds, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := kube().List(ctx, ss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		add("Deployment", d.Name, d.Spec.Template)
	}
	for _, s := range ss.Items {
		add("StatefulSet", s.Name, s.Spec.Template)
	}
	return out
}

// touchXR annotates the claim's XR, so Crossplane reconciles it now
// rather than at its next poll.
func touchXR(t *testing.T, claim *unstructured.Unstructured) {
	t.Helper()
	xr, _ := composed(t, claim)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"e2e.armadaproject.io/touched":%q}}}`, time.Now().Format(time.RFC3339Nano)))
	if err := kube().Patch(context.Background(), xr, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("cannot annotate the XR: %v", err)
	}
}
