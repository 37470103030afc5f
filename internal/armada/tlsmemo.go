package armada

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"sync"
)

// tlsMemoSize bounds each TLS memo: a function serving this many Armadas
// keeps all their certificates; beyond it, an arbitrary entry is evicted
// and merely recomputed when needed.
const tlsMemoSize = 1024

// A tlsMemo remembers results of the TLS work that is the same for the
// same inputs: issuing a certificate from the same seed, template and
// parent, which is deterministic (Ed25519), and parsing the same PEM
// bytes. Crossplane calls the function every few seconds per Armada, and
// until the TLS Secret is observed each call would issue the same
// certificates again. Entries are keyed by a SHA-256 of every input, so a
// hit is exactly what recomputing would give; nothing is written
// anywhere but this process's memory, which holds the keys anyway.
type tlsMemo[V any] struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]V
}

func (c *tlsMemo[V]) get(k [sha256.Size]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *tlsMemo[V]) put(k [sha256.Size]byte, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[sha256.Size]byte]V{}
	}
	if len(c.m) >= tlsMemoSize {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
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

// issued is what issue returns.
type issued struct {
	cert            *x509.Certificate
	key             ed25519.PrivateKey
	certPEM, keyPEM []byte
}

// parsed is what parsePair returns.
type parsed struct {
	cert *x509.Certificate
	key  ed25519.PrivateKey
	ok   bool
}

var (
	issuedMemo tlsMemo[issued]
	parsedMemo tlsMemo[parsed]
)
