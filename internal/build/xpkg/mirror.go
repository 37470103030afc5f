package xpkg

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/build/image"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// ProviderKubernetesRepo is where provider-kubernetes is published.
const ProviderKubernetesRepo = "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes"

// A Mirror is a package of someone else's that configuration-armada
// depends on, rebuilt for places that cannot reach its registry (tests,
// `make install-env`): from the real crossplane.yaml and CRDs in the
// package/ directory of its Go module at the same version.
type Mirror struct {
	// Repo and Version are the package as Dependencies names it.
	Repo, Version string
	// Module is its Go module, which holds package/crossplane.yaml.
	Module string
	// Binary, if set, is the file in the tool binary directory holding the
	// provider built for the host by `make cluster-bins`; it becomes the
	// package's runtime image. Without it the package has none, which only
	// matters where its Deployment could run.
	Binary string
}

// Mirrors lists a mirror for every dependency that is not ours: each
// Crossplane package armada.Dependencies pins.
var Mirrors = func() []Mirror {
	var out []Mirror
	for _, p := range armada.Dependencies {
		if p.Package == "" {
			continue
		}
		m := Mirror{Repo: p.Package, Version: p.Version, Module: p.Module}
		if p.Package == ProviderKubernetesRepo {
			m.Binary = "provider-kubernetes-" + p.Version
		}
		out = append(out, m)
	}
	return out
}()

// MirrorFor returns the mirror of the package repo at version.
func MirrorFor(repo, version string) (Mirror, bool) {
	for _, m := range Mirrors {
		if m.Repo == repo && m.Version == version {
			return m, true
		}
	}
	return Mirror{}, false
}

// MirrorOptions configure BuildMirror.
type MirrorOptions struct {
	// CLI is the pinned Crossplane CLI.
	CLI string
	// BinDir holds the tool binaries (~/.cache/armada-crossplane/bin).
	BinDir string
	// OutDir receives the package and its runtime image tarball.
	OutDir string
}

// BuildMirror builds m's package and returns its .xpkg file, to be pushed
// under m.Repo's path in a local registry.
func BuildMirror(ctx context.Context, m Mirror, o MirrorOptions) (string, error) {
	dir, err := testutil.ModuleDir(ctx, m.Module, m.Version)
	if err != nil {
		return "", err
	}
	name := path.Base(m.Repo)
	file := filepath.Join(o.OutDir, name+"-"+m.Version+".xpkg")
	args := []string{
		"xpkg", "build", "--package-root=" + filepath.Join(dir, "package"),
		"--examples-root=" + filepath.Join(o.OutDir, "no-examples"), "--package-file=" + file,
	}
	if m.Binary != "" {
		bin := filepath.Join(o.BinDir, m.Binary)
		if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
			return "", errors.Errorf("%s %s is missing at %s: build it with `make cluster-bins`", name, m.Version, bin)
		}
		img, err := image.Assemble(image.Runtime{Name: name, CACerts: true}, runtime.GOARCH, bin, image.Options{})
		if err != nil {
			return "", err
		}
		tar := filepath.Join(o.OutDir, "images", name+"-"+runtime.GOARCH+".tar")
		if err := image.WriteTarball(tar, m.Repo+":"+m.Version, img); err != nil {
			return "", err
		}
		args = append(args, "--embed-runtime-image-tarball="+tar)
	}
	return file, errors.Wrapf(run(ctx, o.OutDir, o.CLI, args...), "cannot build the %s %s mirror", name, m.Version)
}

// MirrorsNeeded returns the mirrors of the dependencies the Configuration
// declares (those not ours), failing if one has none.
func MirrorsNeeded(registry string) ([]Mirror, error) {
	var out []Mirror
	for _, d := range Dependencies(registry) {
		if d.Built != "" {
			continue
		}
		m, ok := MirrorFor(d.Package, d.Version)
		if !ok {
			return nil, errors.Errorf("no mirror of dependency %s %s: add a row to xpkg.Mirrors", d.Package, d.Version)
		}
		out = append(out, m)
	}
	return out, nil
}
