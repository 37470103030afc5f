package armada

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// credentialsSecret holds every basic-auth user's password, keyed by user.
func (in *Install) credentials(passwords map[string]string) *corev1.Secret {
	data := map[string][]byte{}
	for _, u := range slices.Sorted(maps.Keys(passwords)) {
		data[u] = []byte(passwords[u])
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(in.credentialsSecret(), "credentials"),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// credentials composes the Secret of generated passwords, reusing every
// password already observed at its desired generation (spec.rotation) so
// they stay stable across reconciles.
func (r *renderer) credentials() error {
	passwords, gens := map[string]string{}, map[string]int32{}
	for _, key := range r.in.passwordKeys() {
		gen, had := r.in.passwordGeneration(key), r.opt.Observed.PasswordGenerations[key]
		gens[key] = gen
		if gen < had {
			return errors.Errorf("spec.rotation.passwords.%s: Invalid value: %d: the credentials Secret holds generation %d; generations only go up", key, gen, had)
		}
		if p, ok := r.opt.Observed.Passwords[key]; ok && gen == had {
			passwords[key] = p
			continue
		}
		if r.opt.Rand == nil {
			return errors.New("cannot generate passwords: no random source configured")
		}
		p, err := generatePassword(rotated(r.opt.Rand, key, gen))
		if err != nil {
			return errors.Wrapf(err, "cannot generate password %q", key)
		}
		passwords[key] = p
	}
	r.passwords = passwords
	secret := r.in.credentials(passwords)
	secret.Annotations = generationAnnotations(gens)
	r.add(keyCredentials, secret, r.exists(keyCredentials))
	return nil
}
