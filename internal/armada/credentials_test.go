package armada

import (
	"bytes"
	"strings"
	"testing"
)

func TestGeneratePassword(t *testing.T) {
	r := KeyedRand([]byte("k"), "xr")
	a, err := generatePassword(r("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != passwordLength {
		t.Errorf("len(password) = %d, want %d", len(a), passwordLength)
	}
	if strings.Trim(a, passwordAlphabet) != "" {
		t.Errorf("password %q has characters outside the alphabet", a)
	}
	again, _ := generatePassword(r("alice"))
	if a != again {
		t.Errorf("same key, identity and user gave different passwords")
	}
	other, _ := generatePassword(r("bob"))
	if a == other {
		t.Errorf("two users got the same password")
	}
	otherXR, _ := generatePassword(KeyedRand([]byte("k"), "xr2")("alice"))
	otherKey, _ := generatePassword(KeyedRand([]byte("k2"), "xr")("alice"))
	if a == otherXR || a == otherKey {
		t.Errorf("another XR or key gave the same password")
	}
	if _, err := generatePassword(nil); err == nil {
		t.Errorf("generatePassword(nil) succeeded, want an error")
	}
	if _, err := generatePassword(bytes.NewReader(nil)); err == nil {
		t.Errorf("generatePassword(empty reader) succeeded, want an error")
	}
}
