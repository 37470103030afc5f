package armada

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// TLS of Armada's internal links (spec.tls). The components the table
// marks serve TLS with a certificate for their Service DNS names, issued by
// a private CA; every in-cluster client of them trusts that CA through
// SSL_CERT_FILE, since Armada's client trusts only the system roots.
//
// The function generates the CA and the certificates itself, as it does
// passwords: ECDSA P-256 keys from the keyed random stream of the XR,
// signed deterministically (RFC 6979), so the same request and validity
// window give byte-identical output, and once
// the TLS Secret is observed every CA and certificate in it that is still
// valid for what is wanted, and not at its renewal point, is reused.
// Serving certificates last a year and are renewed with a third of it
// left; the CA lasts ten years, is replaced after five, and is name
// constrained to the Armada's Service names (tlsclock.go). With
// spec.tls.issuerRef, cert-manager issues them instead (certmanager.go).
//
// Rotation: Armada's gRPC servers, and the server's HTTPS port, reload
// their certificate files every minute
// (internal/common/certs.CachedCertificateService), and the kubelet
// updates a mounted Secret in place. A client reads SSL_CERT_FILE once, so
// the TLS material each pod mounts is also hashed into its pod template:
// a changed CA or certificate rolls the pods that use it.

const (
	// keyTLS is the composition resource name of the TLS Secret.
	keyTLS = "tls"
	// tlsDir is where a pod mounts its certificate, key and the CA.
	tlsDir = "/etc/armada/tls"
	// tlsCertFile, tlsKeyFile and tlsCAFile are the file names under
	// tlsDir; tlsCAFile and tlsCAKey are also the CA's keys in the Secret.
	tlsCertFile = "tls.crt"
	tlsKeyFile  = "tls.key"
	tlsCAFile   = "ca.crt"
	tlsCAKey    = "ca.key"
	// tlsCANextKey holds, during a CA rollover, the key of the CA that
	// ca.crt already trusts and that signs once every pod trusts it.
	tlsCANextKey = "ca-next.key"
	// tlsVolume is the pod volume of the TLS files.
	tlsVolume = "tls"
)

// tlsEpoch stands in for the XR's creation time when it has none (a
// render of a manifest): windows are counted from it (tlsclock.go).
var tlsEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// tlsOn says whether spec.tls is enabled; it is by default.
func (in *Install) tlsOn() bool {
	return in.Spec.TLS == nil || in.Spec.TLS.Enabled == nil || *in.Spec.TLS.Enabled
}

// tlsSecret names the Secret holding the CA and the certificates.
func (in *Install) tlsSecret() string { return in.object("tls") }

// servesTLS says whether an instance serves TLS: itself, or through the
// TLS proxy (tlsproxy.go).
func (in *Install) servesTLS(c *component) bool { return in.tlsOn() && (len(c.TLS) > 0 || c.TLSProxy) }

// trustsTLS says whether an instance is an in-cluster client of a TLS
// server: it has in-cluster links (a remote executor's link is external).
func (in *Install) trustsTLS(inst *instance) bool {
	return in.tlsOn() && len(inst.Clients) > 0 && in.identityOf(inst.Executor) == nil
}

// tlsBlock is the TLS block of a serving component's config.
func tlsBlock() map[string]any {
	return map[string]any{"enabled": true, "certPath": tlsDir + "/" + tlsCertFile, "keyPath": tlsDir + "/" + tlsKeyFile}
}

// tlsDNSNames are the names a component's certificate is valid for: its
// Service's, and for a leader-elected one each pod's name under its
// headless Service, which the leader connection dials.
func (in *Install) tlsDNSNames(c *component) []string {
	svc := in.object(c.Name)
	names := []string{svc, svc + "." + in.Namespace, in.serviceHost(c.Name)}
	if c.LeaderElected {
		names = append(names, "*."+in.object(c.Name+"-headless")+"."+in.Namespace+".svc")
	}
	return names
}

// tlsExtras are the pod settings TLS adds to an instance: its certificate
// and key if it serves TLS, the CA with SSL_CERT_FILE pointing at it if it
// is a client. hash covers every file it mounts, when the function
// generated them.
func (in *Install) tlsExtras(inst *instance, data map[string][]byte) (env []corev1.EnvVar, vols []corev1.Volume, mounts []corev1.VolumeMount, hash string) {
	serves, trusts := in.servesTLS(inst.component), in.trustsTLS(inst)
	if !serves && !trusts {
		return nil, nil, nil, ""
	}
	secret, items := in.tlsSecret(), []corev1.KeyToPath{{Key: tlsCAFile, Path: tlsCAFile}}
	src, fromCertificate := in.certSource(inst)
	switch {
	case fromCertificate:
		// cert-manager's Secret holds the files under their own names.
		secret = in.certificateSecret(src)
		if serves {
			items = append(items, corev1.KeyToPath{Key: tlsCertFile, Path: tlsCertFile}, corev1.KeyToPath{Key: tlsKeyFile, Path: tlsKeyFile})
		}
	case serves:
		items = append(items,
			corev1.KeyToPath{Key: inst.component.Name + ".crt", Path: tlsCertFile},
			corev1.KeyToPath{Key: inst.component.Name + ".key", Path: tlsKeyFile})
	}
	if trusts {
		env = []corev1.EnvVar{{Name: "SSL_CERT_FILE", Value: tlsDir + "/" + tlsCAFile}}
	}
	vols = []corev1.Volume{{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items}}}}
	mounts = []corev1.VolumeMount{{Name: tlsVolume, MountPath: tlsDir, ReadOnly: true}}
	if fromCertificate {
		// The Certificate's content is not seen here: podExtras hashes
		// its revision.
		return env, vols, mounts, ""
	}
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it.Key))
		h.Write(data[it.Key])
	}
	return env, vols, mounts, hex.EncodeToString(h.Sum(nil)[:8])
}

// podExtras are the pod settings an instance has beyond its table row's:
// a remote executor's CA, the OIDC provider's CA, and TLS. A changed CA or certificate rolls the
// pods that mount it, as a changed config does: its hash joins the
// config's (for a cert-manager Certificate, its revision's hash; see
// certmanager.go).
func (r *renderer) podExtras(inst *instance, id *remoteIdentity, configHash string) ([]corev1.EnvVar, []corev1.Volume, []corev1.VolumeMount, string) {
	env, vols, mounts := r.in.remoteExtras(id)
	oidcEnv, oidcVols, oidcMounts := r.in.oidcExtras(inst.component)
	env, vols, mounts = append(env, oidcEnv...), append(vols, oidcVols...), append(mounts, oidcMounts...)
	tlsEnv, tlsVols, tlsMounts, tlsHash := r.in.tlsExtras(inst, r.tlsData)
	if src, ok := r.in.certSource(inst); ok {
		tlsHash = r.certificateHash(inst, src)
	}
	if tlsHash != "" {
		configHash += "-" + tlsHash
	}
	return append(env, tlsEnv...), append(vols, tlsVols...), append(mounts, tlsMounts...), configHash
}

// tls composes the TLS Secret: the CA and a certificate per serving
// component, each reused from the observed Secret while it is valid for
// what is wanted, else generated.
func (r *renderer) tls() error {
	in := r.in
	if !in.tlsOn() {
		return nil
	}
	if in.certManager() {
		r.certificates()
		return nil
	}
	if r.opt.Rand == nil {
		return errors.New("cannot generate TLS certificates: no random source configured")
	}
	clock := newTLSClock(r.opt.Created, r.opt.Now)
	obs, gen := r.opt.Observed.TLS, in.caGeneration()
	if had := r.opt.Observed.CAGeneration; gen < had {
		return errors.Errorf("spec.rotation.ca: Invalid value: %d: the TLS Secret holds generation %d; generations only go up", gen, had)
	}
	data := map[string][]byte{}
	// The CA: kept while it is the CA wanted, else replaced through a
	// rollover that trusts both CAs while pods move (carotation.go).
	ca, caKey, err := r.caRollover(clock, gen, data)
	if err != nil {
		return err
	}
	// A serving certificate is kept while it is for the wanted names,
	// signed by the CA and not at its renewal point; else the one of the
	// current window is issued.
	k, nb, na := clock.leafWindow()
	var leaves []*x509.Certificate
	for i := range components {
		c := &components[i]
		if !in.servesTLS(c) {
			continue
		}
		names := in.tlsDNSNames(c)
		crt, key := c.Name+".crt", c.Name+".key"
		leaf, _, ok := parsePair(r.opt.TLSMemo, obs[crt], obs[key])
		if ok && slices.Equal(leaf.DNSNames, names) && leaf.CheckSignatureFrom(ca) == nil && clock.freshLeaf(leaf) && browserKey(leaf) {
			data[crt], data[key] = obs[crt], obs[key]
			leaves = append(leaves, leaf)
			continue
		}
		seed := rotated(r.opt.Rand, periodLabel("tls\x00"+c.Name, k), gen)
		if leaf, _, data[crt], data[key], err = issue(r.opt.TLSMemo, seed, leafTemplate(names, nb, na), ca, caKey); err != nil {
			return errors.Wrapf(err, "cannot generate the %s TLS certificate", c.Name)
		}
		leaves = append(leaves, leaf)
	}
	r.tlsData = data
	r.out.Status.TLS = tlsStatus(ca, leaves)
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(in.tlsSecret(), "tls"),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	secret.Annotations = generationAnnotations(map[string]int32{rotationCA: gen})
	r.add(keyTLS, secret, r.exists(keyTLS))
	return nil
}

// caTemplate is the private CA's certificate, valid from notBefore to
// notAfter and, by critical name constraints, only for names under
// domains.
func caTemplate(name string, domains []string, notBefore, notAfter time.Time) *x509.Certificate {
	return &x509.Certificate{
		Subject:                     pkix.Name{CommonName: "Armada " + name + " internal CA"},
		NotBefore:                   notBefore,
		NotAfter:                    notAfter,
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         domains,
	}
}

// leafTemplate is a serving certificate for names, valid from notBefore
// to notAfter.
func leafTemplate(names []string, notBefore, notAfter time.Time) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: names[len(names)-1]},
		DNSNames:    names,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

// issue generates an ECDSA P-256 key and a certificate for it from rand,
// signed by parent (self-signed if nil). The key's scalar comes from rand
// and ECDSA signatures are deterministic with no random source (RFC 6979),
// so the same rand gives the same PEM bytes. A certificate memo already
// holds is reused.
//
// Browsers take no Ed25519 certificate: Chromium fails the handshake
// (ERR_SSL_PROTOCOL_ERROR) with a server whose certificate or CA is
// Ed25519, and the Lookout UI calls the server's REST port and binoculars
// from the browser, so every key is ECDSA P-256, which every browser and
// Go's TLS accept. A CA or certificate of another key type in an observed
// Secret (Ed25519, as generated before) is replaced, the CA through a
// rollover (carotation.go).
func issue(memo *TLSMemo, rand io.Reader, tmpl, parent *x509.Certificate,
	parentKey crypto.Signer,
) (*x509.Certificate, crypto.Signer, []byte, []byte, error) {
	seed := make([]byte, 32)
	sn := make([]byte, 16)
	if _, err := io.ReadFull(rand, seed); err != nil {
		return nil, nil, nil, nil, errors.Wrap(err, "cannot read random bytes")
	}
	if _, err := io.ReadFull(rand, sn); err != nil {
		return nil, nil, nil, nil, errors.Wrap(err, "cannot read random bytes")
	}
	sn[0] &= 0x7f
	var parentRaw []byte
	if parent != nil {
		parentRaw = parent.Raw
	}
	mk := memoKey([]byte("issue"), seed, sn, []byte(tmpl.Subject.String()), []byte(strings.Join(tmpl.DNSNames, "\x00")),
		[]byte(tmpl.NotBefore.UTC().Format(time.RFC3339Nano)), []byte(tmpl.NotAfter.UTC().Format(time.RFC3339Nano)),
		[]byte(strconv.FormatBool(tmpl.IsCA)), []byte(strings.Join(tmpl.PermittedDNSDomains, "\x00")), parentRaw)
	if v, ok := memo.Get(mk); ok {
		return v.cert, v.key, v.certPEM, v.keyPEM, nil
	}
	key, err := ecdsaKey(seed, rand)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl.SerialNumber = new(big.Int).SetBytes(sn)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand, tmpl, parent, key.Public(), deterministic(parentKey))
	if err != nil {
		return nil, nil, nil, nil, errors.Wrap(err, "cannot create certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, errors.Wrap(err, "cannot parse certificate")
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, nil, errors.Wrap(err, "cannot encode private key")
	}
	v := tlsResult{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}
	memo.Put(mk, v)
	return v.cert, v.key, v.certPEM, v.keyPEM, nil
}

// ecdsaKey is the P-256 key whose scalar is seed; in the rare case (about
// 2^-32) that seed is not a valid scalar, the next 32 bytes of rand are
// tried.
func ecdsaKey(seed []byte, rand io.Reader) (*ecdsa.PrivateKey, error) {
	for {
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), seed); err == nil {
			return k, nil
		}
		if _, err := io.ReadFull(rand, seed); err != nil {
			return nil, errors.Wrap(err, "cannot read random bytes")
		}
	}
}

// deterministic makes an ECDSA key sign with RFC 6979 (no random source),
// whatever random source x509.CreateCertificate passes it; other keys
// (Ed25519, an observed CA's before a rollover) sign deterministically
// anyway.
func deterministic(k crypto.Signer) crypto.Signer {
	if e, ok := k.(*ecdsa.PrivateKey); ok {
		return rfc6979{e}
	}
	return k
}

// rfc6979 signs with its key and no random source.
type rfc6979 struct{ key *ecdsa.PrivateKey }

func (s rfc6979) Public() crypto.PublicKey { return s.key.Public() }

func (s rfc6979) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return s.key.Sign(nil, digest, opts)
}

// browserKey says whether a certificate's key is of the type issue
// generates, which browsers accept.
func browserKey(c *x509.Certificate) bool { return c.PublicKeyAlgorithm == x509.ECDSA }

// parsePair parses a PEM certificate and its private key (ECDSA, or
// Ed25519 as generated before), and reports whether they are present,
// well-formed and match.
func parsePair(memo *TLSMemo, certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, bool) {
	if len(certPEM) == 0 && len(keyPEM) == 0 {
		return nil, nil, false
	}
	mk := memoKey([]byte("parse"), certPEM, keyPEM)
	if v, ok := memo.Get(mk); ok {
		return v.cert, v.key, v.ok
	}
	cert, key, ok := parsePairUncached(certPEM, keyPEM)
	memo.Put(mk, tlsResult{cert: cert, key: key, ok: ok})
	return cert, key, ok
}

func parsePairUncached(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, bool) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, false
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, false
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, false
	}
	var key crypto.Signer
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		key = k
	case ed25519.PrivateKey:
		key = k
	default:
		return nil, nil, false
	}
	pub, ok := cert.PublicKey.(interface{ Equal(x crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, nil, false
	}
	return cert, key, true
}

// TLSMemo remembers the TLS work that is the same for the same inputs:
// issuing a certificate from the same seed, template and parent, which is
// deterministic (see issue), and parsing the same PEM bytes. Until the TLS
// Secret is observed each call would issue the same certificates again
// (about 1 ms), and every later one parses them. Entries are keyed by a
// SHA-256 of every input (memoKey), so a hit is exactly what recomputing
// would give; nothing is written anywhere but the memory of the process,
// which holds the keys anyway. Its owner (the Function) passes it in
// Options.
type TLSMemo = structenc.Memo[[sha256.Size]byte, tlsResult]

// tlsMemoSize bounds a TLSMemo: some 340 Armadas' certificates (three
// issued and three parsed each), a few kB each.
const tlsMemoSize = 2048

// NewTLSMemo returns an empty TLSMemo.
func NewTLSMemo() *TLSMemo { return structenc.NewMemo[[sha256.Size]byte, tlsResult](tlsMemoSize) }

// tlsResult is what issue or parsePair returns.
type tlsResult struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
	ok              bool
}

// memoKey hashes parts, each length-prefixed so that no two lists of
// parts hash alike.
func memoKey(parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		for i, l := 0, len(p); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write(p)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// validateTLS checks spec.tls.issuerRef, as the XRD does.
func validateTLS(p *field.Path, t *v1alpha1.TLS) field.ErrorList {
	if t == nil || t.IssuerRef == nil {
		return nil
	}
	var errs field.ErrorList
	rp := p.Child("issuerRef")
	if t.Enabled != nil && !*t.Enabled {
		errs = append(errs, field.Invalid(rp, t.IssuerRef.Name, "needs spec.tls.enabled: true"))
	}
	ref := t.IssuerRef
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), "name the cert-manager Issuer or ClusterIssuer"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
		if ref.Name != "" {
			errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	if ref.Kind != "" && !slices.Contains(issuerKinds, ref.Kind) {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, issuerKinds))
	}
	return errs
}
