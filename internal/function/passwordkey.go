package function

import (
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// MinPasswordKeyBytes is the shortest password key the function accepts:
// every generated password and the generated CA are an HMAC under it, so a
// short key (an empty file, a word) makes them computable by anyone who
// can read the XR's UID.
const MinPasswordKeyBytes = 32

// ReadPasswordKey reads the key generated passwords are derived from, as
// --password-key-file names it, and refuses a key shorter than
// MinPasswordKeyBytes.
func ReadPasswordKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path) //nolint:gosec // The operator names the file on the command line.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read password key file")
	}
	if len(key) < MinPasswordKeyBytes {
		return nil, errors.Errorf("--password-key-file %s: the key is %d bytes, want at least %d random bytes (e.g. head -c 32 /dev/urandom > key)",
			path, len(key), MinPasswordKeyBytes)
	}
	return key, nil
}
