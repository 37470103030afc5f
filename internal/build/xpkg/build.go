package xpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/image"
)

// Options configure Build.
type Options struct {
	// RepoRoot is the root of this repository.
	RepoRoot string
	// OutDir receives the packages, their runtime image tarballs
	// (images/) and staged package roots (stage/).
	OutDir string
	// CLI is the pinned Crossplane CLI binary (Makefile CROSSPLANE_CLI).
	CLI string
	// Version of every package built; see GitVersion.
	Version string
	// Registry is the registry and organisation packages are published
	// under. Empty means DefaultRegistry.
	Registry string
	// Architectures of the runtime images. Empty means image.Architectures.
	Architectures []string
	// Created is the runtime images' creation time; zero means the epoch.
	Created time.Time
	// CABundle is passed to image.Options.
	CABundle string
	// Logf receives progress messages. Nil discards them.
	Logf func(format string, args ...any)
}

// A Built package: one .xpkg per architecture (or one for a package
// without a runtime), pushed together under Ref.
type Built struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Ref is where the package is published: REGISTRY/NAME:VERSION.
	Ref string `json:"ref"`
	// Files are the .xpkg files, keyed by architecture ("" for packages
	// without a runtime).
	Files map[string]string `json:"files"`
	// Digests are the package images' digests, keyed like Files.
	Digests map[string]string `json:"digests"`
}

// Result of Build.
type Result struct {
	Version  string  `json:"version"`
	Registry string  `json:"registry"`
	Packages []Built `json:"packages"`
	// Skipped names the packages not built and why.
	Skipped map[string]string `json:"skipped,omitempty"`
}

// Lookup returns the built package named name.
func (r *Result) Lookup(name string) (Built, bool) {
	for _, b := range r.Packages {
		if b.Name == name {
			return b, true
		}
	}
	return Built{}, false
}

// FileList returns b's files in architecture order, as `crossplane xpkg
// push -f` takes them.
func (b Built) FileList() []string {
	files := make([]string, 0, len(b.Files))
	for _, a := range append([]string{""}, image.Architectures...) {
		if f, ok := b.Files[a]; ok {
			files = append(files, f)
		}
	}
	return files
}

// ResultFile is the file in OutDir that records the Result as JSON.
const ResultFile = "packages.json"

// Build builds every available package in Packages into OutDir and writes
// ResultFile there.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Registry == "" {
		o.Registry = DefaultRegistry
	}
	if len(o.Architectures) == 0 {
		o.Architectures = image.Architectures
	}
	if fi, err := os.Stat(o.CLI); err != nil || fi.Mode()&0o111 == 0 {
		return nil, errors.Errorf("crossplane CLI is missing at %q: build it with `make tools` (tools/build-crossplane.sh)", o.CLI)
	}
	if err := os.MkdirAll(o.OutDir, 0o750); err != nil {
		return nil, errors.Wrap(err, "cannot create output directory")
	}
	res := &Result{Version: o.Version, Registry: o.Registry, Skipped: map[string]string{}}
	st := &stage{root: o.RepoRoot, registry: o.Registry, version: o.Version, built: map[string]bool{}, logf: o.Logf}
	for _, p := range Packages {
		if !p.Available(o.RepoRoot) {
			res.Skipped[p.Name] = "missing " + p.Root + "/crossplane.yaml or its runtime's Go package"
			o.Logf("skipping %s: %s", p.Name, res.Skipped[p.Name])
			continue
		}
		b, err := buildPackage(ctx, o, st, p)
		if err != nil {
			return nil, err
		}
		st.built[p.Name] = true
		res.Packages = append(res.Packages, b)
	}
	j, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode build result")
	}
	return res, errors.Wrap(os.WriteFile(filepath.Join(o.OutDir, ResultFile), append(j, '\n'), 0o600), "cannot write build result")
}

// buildPackage stages and builds one package, once per architecture if it
// has a runtime.
func buildPackage(ctx context.Context, o Options, st *stage, p Package) (Built, error) {
	b := Built{Name: p.Name, Kind: p.Kind, Ref: o.Registry + "/" + p.Name + ":" + o.Version, Files: map[string]string{}, Digests: map[string]string{}}
	root := filepath.Join(o.OutDir, "stage", p.Name)
	if err := st.stagePackage(p, root); err != nil {
		return Built{}, err
	}
	archs := []string{""}
	if p.Runtime != "" {
		archs = o.Architectures
	}
	imgs := map[string]v1.Image{}
	for _, arch := range archs {
		file := filepath.Join(o.OutDir, p.Name+".xpkg")
		args := []string{"xpkg", "build", "--package-root=" + root, "--examples-root=" + filepath.Join(root, "no-examples")}
		if arch != "" {
			tar, img, err := runtimeTarball(ctx, o, p, arch, b.Ref)
			if err != nil {
				return Built{}, err
			}
			imgs[arch] = img
			file = filepath.Join(o.OutDir, p.Name+"-"+arch+".xpkg")
			args = append(args, "--embed-runtime-image-tarball="+tar)
		}
		args = append(args, "--package-file="+file)
		if err := run(ctx, o.RepoRoot, o.CLI, args...); err != nil {
			return Built{}, errors.Wrapf(err, "cannot build package %s", p.Name)
		}
		d, err := Digest(file)
		if err != nil {
			return Built{}, err
		}
		b.Files[arch], b.Digests[arch] = file, d
		o.Logf("built %s %s", file, d)
	}
	if len(imgs) > 0 {
		if err := image.WriteLayout(filepath.Join(o.OutDir, "images", p.Runtime), imgs); err != nil {
			return Built{}, err
		}
	}
	return b, nil
}

// runtimeTarball builds p's runtime image for arch and writes it as a
// tarball for --embed-runtime-image-tarball.
func runtimeTarball(ctx context.Context, o Options, p Package, arch, ref string) (string, v1.Image, error) {
	r, ok := image.Lookup(p.Runtime)
	if !ok {
		return "", nil, errors.Errorf("cannot find runtime %q of package %s in image.Runtimes", p.Runtime, p.Name)
	}
	img, err := image.Build(ctx, r, arch, image.Options{
		RepoRoot: o.RepoRoot, WorkDir: filepath.Join(o.OutDir, "bin"), Created: o.Created, CABundle: o.CABundle,
	})
	if err != nil {
		return "", nil, err
	}
	tar := filepath.Join(o.OutDir, "images", r.Name+"-"+arch+".tar")
	if err := image.WriteTarball(tar, ref, img); err != nil {
		return "", nil, err
	}
	return tar, img, nil
}

// Digest returns the digest of the package image in an .xpkg file.
func Digest(file string) (string, error) {
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read package %s", file)
	}
	d, err := img.Digest()
	if err != nil {
		return "", errors.Wrapf(err, "cannot compute digest of %s", file)
	}
	return d.String(), nil
}

// Push pushes a built package's files to ref (REGISTRY/REPOSITORY:TAG) with
// the Crossplane CLI: several files are pushed as one index.
func Push(ctx context.Context, cli, dir string, b Built, ref string) error {
	err := run(ctx, dir, cli, "xpkg", "push", "--package-files="+strings.Join(b.FileList(), ","), ref)
	return errors.Wrapf(err, "cannot push package %s to %s", b.Name, ref)
}

// run runs a command in dir, returning its output in the error.
func run(ctx context.Context, dir, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // Runs the pinned Crossplane CLI the caller names.
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return errors.Wrapf(err, "%s %s: %s", filepath.Base(bin), strings.Join(args, " "), out.String())
	}
	return nil
}
