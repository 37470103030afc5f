package armada

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"io"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// passwordAlphabet avoids characters that need quoting in URLs, shells or
// YAML.
const passwordAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// passwordLength gives about 190 bits of entropy.
const passwordLength = 32

// generatePassword reads a password from r. Rejection sampling keeps every
// character equally likely.
func generatePassword(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no random source")
	}
	out := make([]byte, 0, passwordLength)
	buf := make([]byte, passwordLength)
	limit := 256 - 256%len(passwordAlphabet)
	for len(out) < passwordLength {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", errors.Wrap(err, "cannot read random bytes")
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < passwordLength {
				out = append(out, passwordAlphabet[int(b)%len(passwordAlphabet)])
			}
		}
	}
	return string(out), nil
}

// RandFunc returns the random source for one user's password.
type RandFunc func(user string) io.Reader

// KeyedRand derives each user's random stream from a secret key and the
// XR's identity (HMAC-SHA256 in counter mode). The same key and request
// therefore give byte-identical output, while the passwords stay
// unpredictable to anyone without the key. The function keeps a random key
// per process unless given one; once the credentials Secret is observed its
// passwords are reused, so a new key never changes them.
func KeyedRand(key []byte, identity string) RandFunc {
	return func(user string) io.Reader {
		return &hmacStream{key: key, label: identity + "\x00" + user}
	}
}

// hmacStream is an io.Reader of HMAC(key, label || counter) blocks.
type hmacStream struct {
	key     []byte
	label   string
	counter uint64
	buf     []byte
}

func (h *hmacStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(h.buf) == 0 {
			m := hmac.New(sha256.New, h.key)
			var c [8]byte
			binary.BigEndian.PutUint64(c[:], h.counter)
			h.counter++
			m.Write([]byte(h.label))
			m.Write(c[:])
			h.buf = m.Sum(nil)
		}
		k := copy(p[n:], h.buf)
		h.buf = h.buf[k:]
		n += k
	}
	return n, nil
}
