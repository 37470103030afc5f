package conformance

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// supplyCertificates stands in for cert-manager: for every rendered
// cert-manager Certificate it issues, from one private CA of the test's
// (one issuer), a certificate for exactly the rendered dnsNames with a key
// of the rendered algorithm, and supplies the Secret the Certificate names
// with what cert-manager writes there: tls.crt, tls.key (in the rendered
// encoding) and the issuer's CA as ca.crt. The TLS check then proves the
// pods mount those files at the rendered paths, serve them for the names
// their clients dial, and that the clients trust the issuer's CA. It
// returns how many Certificates it issued.
func supplyCertificates(t *testing.T, r *Render, supplied map[SecretRef]string) int {
	t.Helper()
	var ca *privateCA
	n := 0
	for _, o := range r.Objects {
		if o.GetAPIVersion() != "cert-manager.io/v1" || o.GetKind() != "Certificate" {
			continue
		}
		if ca == nil {
			ca = newPrivateCA(t)
		}
		secret, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
		names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
		pk, _, _ := unstructured.NestedMap(o.Object, "spec", "privateKey")
		// What the stand-in issues; anything else the render asked for
		// would need another stand-in.
		if pk["algorithm"] != "ECDSA" || fmt.Sprint(pk["size"]) != "256" || pk["encoding"] != "PKCS8" || secret == "" || len(names) == 0 {
			t.Fatalf("Certificate %s asks for secret %q, names %v and key %v: the stand-in issues ECDSA P-256 PKCS#8 keys for named Secrets and names",
				o.GetName(), secret, names, pk)
		}
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: serial(t),
			Subject:      pkix.Name{},
			DNSNames:     names,
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
		if err != nil {
			t.Fatalf("cannot issue Certificate %s: %v", o.GetName(), err)
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		supplied[SecretRef{Name: secret, Key: "tls.crt"}] = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		supplied[SecretRef{Name: secret, Key: "tls.key"}] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
		supplied[SecretRef{Name: secret, Key: "ca.crt"}] = string(ca.PEM)
		t.Logf("cert-manager stand-in: Certificate %s issued into Secret %s for %v", o.GetName(), secret, names)
		n++
	}
	return n
}
