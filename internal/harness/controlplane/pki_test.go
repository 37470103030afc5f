package controlplane

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"testing"
)

func TestCertAuthority(t *testing.T) {
	ca, err := newCertAuthority("test-ca")
	if err != nil {
		t.Fatalf("newCertAuthority: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.certPEM) {
		t.Fatal("cannot add CA to pool")
	}
	cases := map[string]struct {
		opts  certOptions
		usage x509.ExtKeyUsage
		host  string
	}{
		"ServerFor127.0.0.1": {opts: serverCert("server"), usage: x509.ExtKeyUsageServerAuth, host: "127.0.0.1"},
		"ServerForLocalhost": {opts: serverCert("server"), usage: x509.ExtKeyUsageServerAuth, host: "localhost"},
		"Client":             {opts: clientCert("crossplane"), usage: x509.ExtKeyUsageClientAuth},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := ca.writeTLSDir(dir, tc.opts); err != nil {
				t.Fatalf("writeTLSDir: %v", err)
			}
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, fileTLSCert), filepath.Join(dir, fileTLSKey))
			if err != nil {
				t.Fatalf("cannot load key pair: %v", err)
			}
			cert, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatalf("cannot parse certificate: %v", err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestServerCertHasLoopbackIP(t *testing.T) {
	o := serverCert("x")
	if len(o.IPs) != 1 || !o.IPs[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("serverCert IPs: got %v, want [127.0.0.1]", o.IPs)
	}
}
