package xpkg

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/image"
)

// Provider-kubernetes, as configuration-armada depends on it.
const (
	ProviderKubernetesRepo   = "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes"
	providerKubernetesModule = "github.com/crossplane-contrib/provider-kubernetes"
)

// MirrorOptions configure MirrorProviderKubernetes.
type MirrorOptions struct {
	// CLI is the pinned Crossplane CLI.
	CLI string
	// Binary is the provider-kubernetes binary built by `make
	// cluster-bins` for the host architecture.
	Binary string
	// OutDir receives the package and its runtime image tarball.
	OutDir string
}

// MirrorProviderKubernetes builds provider-kubernetes' package at
// ProviderKubernetesVersion for places that cannot reach its registry:
// from the real package/crossplane.yaml and CRDs in its Go module, with a
// runtime image (for the host architecture) holding the provider binary.
// It returns the .xpkg file, to be pushed to ProviderKubernetesRepo's
// path in a local registry.
func MirrorProviderKubernetes(ctx context.Context, o MirrorOptions) (string, error) {
	if fi, err := os.Stat(o.Binary); err != nil || fi.Mode()&0o111 == 0 {
		return "", errors.Errorf("provider-kubernetes %s is missing at %s: build it with `make cluster-bins`", ProviderKubernetesVersion, o.Binary)
	}
	dir, err := moduleDir(ctx, providerKubernetesModule, ProviderKubernetesVersion)
	if err != nil {
		return "", err
	}
	img, err := image.Assemble(image.Runtime{Name: "provider-kubernetes", CACerts: true}, runtime.GOARCH, o.Binary, image.Options{})
	if err != nil {
		return "", err
	}
	tar := filepath.Join(o.OutDir, "images", "provider-kubernetes-"+runtime.GOARCH+".tar")
	if err := image.WriteTarball(tar, ProviderKubernetesRepo+":"+ProviderKubernetesVersion, img); err != nil {
		return "", err
	}
	file := filepath.Join(o.OutDir, "provider-kubernetes-"+runtime.GOARCH+".xpkg")
	err = run(ctx, o.OutDir, o.CLI, "xpkg", "build", "--package-root="+filepath.Join(dir, "package"),
		"--examples-root="+filepath.Join(o.OutDir, "no-examples"), "--embed-runtime-image-tarball="+tar, "--package-file="+file)
	return file, errors.Wrap(err, "cannot build provider-kubernetes package")
}

// moduleDir returns the module cache directory of module@version,
// downloading it if needed. It runs outside any module, so it never
// touches a go.mod.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	var m struct {
		Dir   string `json:"Dir"`
		Error string `json:"Error"`
	}
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", errors.Errorf("cannot download %s@%s: %s", module, version, m.Error)
	}
	if err != nil || m.Dir == "" {
		return "", errors.Wrapf(err, "cannot download %s@%s", module, version)
	}
	return m.Dir, nil
}
