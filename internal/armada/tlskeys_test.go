package armada

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTLSKeysBrowsersAccept proves every generated CA and certificate is
// ECDSA P-256 signed with ECDSA: the Lookout UI calls the server's REST
// port and binoculars from the user's browser, and Chromium fails the
// handshake (ERR_SSL_PROTOCOL_ERROR) with a server whose certificate or CA
// is Ed25519, as generated before. An observed Ed25519 CA is rolled over
// to an ECDSA one (first step: both trusted, the new one's key waiting),
// and an observed Ed25519 certificate is re-issued.
func TestTLSKeysBrowsersAccept(t *testing.T) {
	created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	algorithms := func(data map[string][]byte, keys ...string) []string {
		var out []string
		for _, k := range keys {
			for _, b := range pemCertificates(data[k]) {
				c := certOf(t, b)
				out = append(out, k+": "+c.PublicKeyAlgorithm.String()+" signed "+c.SignatureAlgorithm.String())
			}
		}
		return out
	}
	in, fresh := renderTLS(t, spec(withTLS), "k", nil, created)
	want := []string{
		"ca.crt: ECDSA signed ECDSA-SHA256", "server.crt: ECDSA signed ECDSA-SHA256", "scheduler.crt: ECDSA signed ECDSA-SHA256",
		"lookout.crt: ECDSA signed ECDSA-SHA256", "binoculars.crt: ECDSA signed ECDSA-SHA256",
	}
	if diff := cmp.Diff(want, algorithms(tlsData(fresh), "ca.crt", "server.crt", "scheduler.crt", "lookout.crt", "binoculars.crt")); diff != "" {
		t.Errorf("generated: key and signature algorithms (-want +got):\n%s", diff)
	}

	// What an earlier release generated: an Ed25519 CA and certificate,
	// valid and for the wanted names.
	_, caKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := caTemplate(in.Name+"."+in.Namespace, in.tlsPermittedDomains(), created, created.Add(tlsCAValidity))
	caTmpl.SerialNumber = big.NewInt(1)
	caDER, err := x509.CreateCertificate(nil, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := certOf(t, pemOf("CERTIFICATE", caDER))
	_, leafKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := leafTemplate(in.tlsDNSNames(&components[slices.IndexFunc(components, func(c component) bool { return c.Name == "server" })]), created, created.Add(tlsLeafValidity))
	leafTmpl.Subject = pkix.Name{CommonName: in.serviceHost("server")}
	leafTmpl.SerialNumber = big.NewInt(2)
	leafDER, err := x509.CreateCertificate(nil, leafTmpl, ca, leafKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string][]byte{
		tlsCAFile: pemOf("CERTIFICATE", caDER), tlsCAKey: pkcs8PEM(t, caKey),
		"server.crt": pemOf("CERTIFICATE", leafDER), "server.key": pkcs8PEM(t, leafKey),
	}
	_, next := renderTLS(t, spec(withTLS), "k", observed, created.Add(24*time.Hour))
	data := tlsData(next)
	want = []string{"ca.crt: Ed25519 signed Ed25519", "ca.crt: ECDSA signed ECDSA-SHA256", "server.crt: ECDSA signed Ed25519"}
	if diff := cmp.Diff(want, algorithms(data, "ca.crt", "server.crt")); diff != "" {
		t.Errorf("observed Ed25519: the rollover's first step trusts the old CA and the new, the old still signing (-want +got):\n%s", diff)
	}
	if b := pemCertificates(data[tlsCAFile]); len(b) != 2 {
		t.Errorf("observed Ed25519: ca.crt holds %d certificates, want the old CA and the new", len(b))
	} else if _, _, ok := parsePair(nil, b[1], data[tlsCANextKey]); !ok {
		t.Error("observed Ed25519: ca-next.key is not the new ECDSA CA's key")
	}
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8PEM(t *testing.T, key any) []byte {
	t.Helper()
	b, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("PRIVATE KEY", b)
}
