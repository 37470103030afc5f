package testutil

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ToolDir is the directory of the tool cache the Makefile builds the
// pinned tools into: $ARMADA_CROSSPLANE_CACHE/bin, by default
// ~/.cache/armada-crossplane/bin. If env names a variable that is set,
// its value is the directory instead (e.g. ARMADA_BIN_ROOT); "" names
// none.
func ToolDir(env string) (string, error) {
	if v := override(env); v != "" {
		return v, nil
	}
	return cacheBin(env)
}

// Tool is the path of the tool cache's binary name at version, named
// name-version in the tool cache. If env names a variable that is set,
// its value is the path instead (e.g. CROSSPLANE_CLI); "" names none.
// Tool does not check the binary exists: its callers say how to build a
// missing one.
func Tool(env, name, version string) (string, error) {
	if v := override(env); v != "" {
		return v, nil
	}
	dir, err := cacheBin(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name+"-"+version), nil
}

// LookoutUIDir returns the built Lookout UI of an Armada release (x.y.z
// or vx.y.z) under the tool cache's root, as tools/lookoutui/build.sh
// builds it, or "" if it is not built.
func LookoutUIDir(root, version string) string {
	ui := filepath.Join(root, "lookoutui-v"+strings.TrimPrefix(version, "v"), "build")
	if _, err := os.Stat(filepath.Join(ui, "index.html")); err != nil {
		return ""
	}
	return ui
}

// override is the value of the variable env, "" if env is "" or unset.
func override(env string) string {
	if env == "" {
		return ""
	}
	return os.Getenv(env)
}

// cacheBin is the tool cache's directory; an error names env, the
// variable that would have spared looking for the home directory.
func cacheBin(env string) (string, error) {
	cache := os.Getenv("ARMADA_CROSSPLANE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			if env != "" {
				return "", errors.Wrapf(err, "cannot find the home directory for the tool cache; set %s", env)
			}
			return "", errors.Wrap(err, "cannot find the home directory for the tool cache")
		}
		cache = filepath.Join(home, ".cache", "armada-crossplane")
	}
	return filepath.Join(cache, "bin"), nil
}
