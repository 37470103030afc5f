package function

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPasswordKey(t *testing.T) {
	cases := map[string]struct {
		reason  string
		key     []byte
		wantErr string
	}{
		"Empty": {
			reason:  "An empty file makes every password computable.",
			key:     nil,
			wantErr: "the key is 0 bytes, want at least 32",
		},
		"Short": {
			reason:  "31 bytes is one short.",
			key:     []byte(strings.Repeat("k", 31)),
			wantErr: "the key is 31 bytes, want at least 32",
		},
		"LongEnough": {
			reason: "32 bytes is accepted as it is.",
			key:    []byte(strings.Repeat("k", 32)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, tc.key, 0o600); err != nil {
				t.Fatal(err)
			}
			key, err := ReadPasswordKey(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nReadPasswordKey(): want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
				return
			}
			if err != nil || !bytes.Equal(key, tc.key) {
				t.Errorf("%s\nReadPasswordKey(): want the key, got %q, %v", tc.reason, key, err)
			}
		})
	}
	if _, err := ReadPasswordKey(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadPasswordKey(missing file): want an error, got none")
	}
}
