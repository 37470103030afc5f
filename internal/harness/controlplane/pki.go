package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// certValidity is how long the throwaway certificates are valid.
const certValidity = 48 * time.Hour

// Names of the files in a TLS directory, as function-sdk-go, Crossplane
// and controller-runtime's webhook server expect them.
const (
	fileCACert  = "ca.crt"
	fileTLSCert = "tls.crt"
	fileTLSKey  = "tls.key"
)

// A certAuthority is a throwaway CA that signs every certificate of one
// control plane: the API server's serving certificate, the function's and
// provider-kubernetes' serving certificates and Crossplane's client
// certificate.
type certAuthority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// certOptions describe a leaf certificate.
type certOptions struct {
	CommonName string
	Usages     []x509.ExtKeyUsage
	IPs        []net.IP
	DNSNames   []string
}

// serverCert describes a serving certificate for 127.0.0.1 and localhost.
func serverCert(cn string) certOptions {
	return certOptions{
		CommonName: cn,
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:   []string{"localhost"},
	}
}

// clientCert describes a client certificate.
func clientCert(cn string) certOptions {
	return certOptions{CommonName: cn, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// newCertAuthority generates a self-signed ECDSA P-256 CA.
func newCertAuthority(cn string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate CA key")
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"armada-crossplane control plane"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create CA certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse CA certificate")
	}
	return &certAuthority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// issue returns a PEM certificate and PEM (PKCS #8) key signed by the CA.
func (ca *certAuthority) issue(o certOptions) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot generate key")
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.CommonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  o.Usages,
		IPAddresses:  o.IPs,
		DNSNames:     o.DNSNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "cannot create certificate for %s", o.CommonName)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot marshal key")
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kder), nil
}

// writeTLSDir issues a certificate and writes ca.crt, tls.crt and tls.key to
// dir, the layout function-sdk-go's MTLSCertificates, Crossplane's
// --tls-client-certs-dir and controller-runtime's webhook server read.
func (ca *certAuthority) writeTLSDir(dir string, o certOptions) error {
	certPEM, keyPEM, err := ca.issue(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errors.Wrapf(err, "cannot create TLS directory %s", dir)
	}
	for name, b := range map[string][]byte{fileCACert: ca.certPEM, fileTLSCert: certPEM, fileTLSKey: keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return errors.Wrapf(err, "cannot write %s", name)
		}
	}
	return nil
}

// writeServiceAccountKeys writes the RSA key pair kube-apiserver signs and
// verifies service account tokens with, returning the paths of the public
// and the private key.
func writeServiceAccountKeys(dir string) (pub, priv string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", errors.Wrap(err, "cannot generate service account key")
	}
	pder, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", errors.Wrap(err, "cannot marshal service account public key")
	}
	pub, priv = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	if err := os.WriteFile(pub, pemBlock("PUBLIC KEY", pder), 0o600); err != nil {
		return "", "", errors.Wrap(err, "cannot write service account public key")
	}
	if err := os.WriteFile(priv, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), 0o600); err != nil {
		return "", "", errors.Wrap(err, "cannot write service account private key")
	}
	return pub, priv, nil
}

// randomToken returns 32 random hex characters.
func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", errors.Wrap(err, "cannot generate token")
	}
	return hex.EncodeToString(b), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate serial number")
	}
	return n, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
