package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ModuleDir returns the module cache directory of module@version,
// downloading the module if it is not cached yet. It runs outside any
// module, so it never touches a go.mod.
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version) //nolint:gosec // Pinned modules the callers name.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var m struct {
		Dir   string `json:"Dir"`
		Error string `json:"Error"`
	}
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", errors.Errorf("cannot download %s@%s: %s", module, version, m.Error)
	}
	if err != nil {
		return "", errors.Wrapf(err, "cannot download %s@%s: %s", module, version, stderr.String())
	}
	if m.Dir == "" {
		return "", errors.Errorf("cannot find %s@%s in the module cache", module, version)
	}
	return m.Dir, nil
}
