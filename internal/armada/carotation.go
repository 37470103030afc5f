package armada

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// CA rollover. A client reads its CA file (SSL_CERT_FILE) once, at start,
// and a pod rolls some time after the Secret changes; replacing the CA in
// one step would leave a rolled client distrusting a server not rolled
// yet, and the reverse. So a new CA (spec.rotation.ca raised, or the CA at
// its half life) takes three steps, each waiting until every observed
// workload that mounts the TLS Secret is ready at what the Secret holds:
//
//  1. Introduce: ca.crt becomes a bundle of the old and the new CA; the
//     old one still signs (ca.key), the new one's key waits in
//     ca-next.key. Every pod mounting ca.crt rolls and trusts both.
//  2. Switch: the new CA signs (ca.key); every serving certificate is
//     re-issued under it. ca.crt is unchanged, so only the servers roll;
//     every client already trusts both.
//  3. Retire: ca.crt holds the new CA alone; the pods roll once more.
//
// The bundle is in a fixed order (oldest first, by validity then bytes),
// so the same CAs give the same bytes. With no valid CA observed, or none
// of the workloads observed, the steps pass at once: there is nobody to
// keep talking.

// caRollover fills data's CA keys and returns the CA that signs serving
// certificates, with its key.
func (r *renderer) caRollover(clock tlsClock, gen int32, data map[string][]byte) (*x509.Certificate, crypto.Signer, error) {
	in, obs, memo := r.in, r.opt.Observed.TLS, r.opt.TLSMemo
	blocks := pemCertificates(obs[tlsCAFile])
	signing, signingKey, signingPEM := bundleKey(memo, blocks, obs[tlsCAKey])
	next, nextKey, nextPEM := bundleKey(memo, blocks, obs[tlsCANextKey])
	// The CA pods move to: the incoming one during a rollover.
	current := signing
	if next != nil {
		current = next
	}
	domains := in.tlsPermittedDomains()
	// A CA of a key type browsers refuse (Ed25519, as generated before)
	// is rolled over like one at its half life.
	wanted := current != nil && current.IsCA && gen == r.opt.Observed.CAGeneration && clock.freshCA(current) &&
		slices.Equal(current.PermittedDNSDomains, domains) && browserKey(current)
	switch {
	case !wanted:
		k, nb, na := clock.caWindow()
		tmpl := caTemplate(in.Name+"."+in.Namespace, domains, nb, na)
		ca, caKey, crt, key, err := issue(memo, rotated(r.opt.Rand, periodLabel("tls\x00ca", k), gen), tmpl, nil, nil)
		if err != nil {
			return nil, nil, errors.Wrap(err, "cannot generate the TLS CA")
		}
		if signing == nil || !clock.valid(signing) {
			// Nothing valid to roll over from.
			data[tlsCAFile], data[tlsCAKey] = crt, key
			return ca, caKey, nil
		}
		// 1. Introduce the new CA beside the one that signs.
		data[tlsCAFile] = caBundle(memo, signingPEM, crt)
		data[tlsCAKey], data[tlsCANextKey] = obs[tlsCAKey], key
		return signing, signingKey, nil
	case next != nil && r.rolledOnto(obs):
		// 2. Switch: the new CA signs; ca.crt stays as it is.
		data[tlsCAFile] = caBundle(memo, signingPEM, nextPEM)
		data[tlsCAKey] = obs[tlsCANextKey]
		return next, nextKey, nil
	case next != nil:
		data[tlsCAFile] = caBundle(memo, signingPEM, nextPEM)
		data[tlsCAKey], data[tlsCANextKey] = obs[tlsCAKey], obs[tlsCANextKey]
		return signing, signingKey, nil
	case len(blocks) > 1 && !r.rolledOnto(obs):
		// Retiring: the old CA stays trusted while it is valid and the
		// servers move to certificates of the new one.
		data[tlsCAFile] = caBundle(memo, append(slices.Clone(blocks), signingPEM)...)
		data[tlsCAKey] = obs[tlsCAKey]
		return signing, signingKey, nil
	default:
		// 3. Retire (or steady): the signing CA alone.
		data[tlsCAFile], data[tlsCAKey] = signingPEM, obs[tlsCAKey]
		return signing, signingKey, nil
	}
}

// valid says whether a certificate is within its validity now.
func (c tlsClock) valid(cert *x509.Certificate) bool {
	return !c.now.Before(cert.NotBefore) && c.now.Before(cert.NotAfter)
}

// rolledOnto says whether every observed workload that mounts the TLS
// Secret is ready with pods that mount it as data holds it: its config
// hash ends with the hash of the TLS files it mounts.
func (r *renderer) rolledOnto(data map[string][]byte) bool {
	for _, inst := range instances(r.in) {
		w, ok := r.opt.Observed.Workloads[inst.Name]
		if !ok {
			continue
		}
		if _, _, _, h := r.in.tlsExtras(inst, data); h != "" && (!w.Ready || !strings.HasSuffix(w.ConfigHash, "-"+h)) {
			return false
		}
	}
	return true
}

// pemCertificates splits a PEM bundle into its certificates, each encoded
// alone.
func pemCertificates(b []byte) [][]byte {
	var out [][]byte
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return out
		}
		if blk.Type == "CERTIFICATE" {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: blk.Type, Bytes: blk.Bytes}))
		}
	}
}

// bundleKey finds the certificate of a bundle that keyPEM is the key of.
func bundleKey(memo *TLSMemo, blocks [][]byte, keyPEM []byte) (*x509.Certificate, crypto.Signer, []byte) {
	if len(keyPEM) == 0 {
		return nil, nil, nil
	}
	for _, b := range blocks {
		if c, k, ok := parsePair(memo, b, keyPEM); ok {
			return c, k, b
		}
	}
	return nil, nil, nil
}

// caBundle is the trust bundle of CA certificates: each once, oldest
// first (by NotBefore, then bytes), so the same CAs give the same bytes.
func caBundle(memo *TLSMemo, certs ...[]byte) []byte {
	type entry struct {
		pem  []byte
		cert *x509.Certificate
	}
	var es []entry
	for _, b := range certs {
		if len(b) == 0 || slices.ContainsFunc(es, func(e entry) bool { return bytes.Equal(e.pem, b) }) {
			continue
		}
		c, err := parseCertificate(memo, b)
		if err != nil {
			continue
		}
		es = append(es, entry{b, c})
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := a.cert.NotBefore.Compare(b.cert.NotBefore); c != 0 {
			return c
		}
		return bytes.Compare(a.pem, b.pem)
	})
	var out []byte
	for _, e := range es {
		out = append(out, e.pem...)
	}
	return out
}

// parseCertificate parses one PEM certificate, through memo.
func parseCertificate(memo *TLSMemo, b []byte) (*x509.Certificate, error) {
	mk := memoKey([]byte("cert"), b)
	if v, ok := memo.Get(mk); ok {
		return v.cert, nil
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("cannot decode PEM certificate")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse certificate")
	}
	memo.Put(mk, tlsResult{cert: c, ok: true})
	return c, nil
}
