// Package image builds the runtime images of this repository's Crossplane
// packages without Docker: it cross-compiles a static Go binary per
// architecture and lays it on a minimal base built here (see base.go), with
// fixed file modes, owners and timestamps, so the same inputs always give
// the same image digest.
//
// Adding an image is one row in Runtimes.
package image

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Runtime is one runtime image: a Go main package and how it runs.
type Runtime struct {
	// Name of the image and of the binary in it, e.g. function-armada.
	Name string
	// Package is the Go main package, relative to the repository root.
	Package string
	// CACerts puts the Debian CA bundle in the image, for binaries that
	// call TLS endpoints outside the cluster.
	CACerts bool
	// Ports the binary listens on, recorded as ExposedPorts.
	Ports []string
}

// Runtimes are the runtime images this repository builds. A row whose
// Package directory does not exist yet is skipped by Available, so a row
// can land before its code.
var Runtimes = []Runtime{
	{Name: "function-armada", Package: "./functions/armada", Ports: []string{"9443/tcp"}},
	// provider-armada is written on another branch; its images are built as
	// soon as ./cmd/provider exists.
	{Name: "provider-armada", Package: "./cmd/provider", CACerts: true},
}

// Lookup returns the row named name.
func Lookup(runtimeName string) (Runtime, bool) {
	for _, r := range Runtimes {
		if r.Name == runtimeName {
			return r, true
		}
	}
	return Runtime{}, false
}

// Available reports whether the runtime's Go package exists under root.
func (r Runtime) Available(root string) bool {
	fi, err := os.Stat(filepath.Join(root, r.Package))
	return err == nil && fi.IsDir()
}

// Architectures the images are built for.
var Architectures = []string{"amd64", "arm64"}

// BinaryPath is where the binary lives in the image.
func (r Runtime) BinaryPath() string { return "/usr/local/bin/" + r.Name }

// Options configure Build.
type Options struct {
	// RepoRoot is the root of this repository.
	RepoRoot string
	// WorkDir receives the compiled binaries.
	WorkDir string
	// Created is the image's creation time; the zero value means the Unix
	// epoch. Callers pass SOURCE_DATE_EPOCH here when it is set.
	Created time.Time
	// CABundle is the CA bundle put in images with CACerts. Empty means
	// DefaultCABundle.
	CABundle string
}

// DefaultCABundle is Debian's ca-certificates bundle.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// NonRoot is the uid and gid the images run as (distroless' nonroot).
const NonRoot = 65532

// Build compiles the runtime for linux/arch and returns its image.
func Build(ctx context.Context, r Runtime, arch string, o Options) (v1.Image, error) {
	bin, err := compile(ctx, r, arch, o)
	if err != nil {
		return nil, err
	}
	return Assemble(r, arch, bin, o)
}

// Assemble returns the image of runtime r for linux/arch running the
// compiled binary bin.
func Assemble(r Runtime, arch, bin string, o Options) (v1.Image, error) {
	var ca []byte
	if r.CACerts {
		path := o.CABundle
		if path == "" {
			path = DefaultCABundle
		}
		b, err := os.ReadFile(path) //nolint:gosec // The CA bundle path is the caller's choice.
		if err != nil {
			return nil, errors.Wrap(err, "cannot read CA bundle (install Debian's ca-certificates)")
		}
		ca = b
	}
	base, err := baseLayer(ca)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(bin) //nolint:gosec // The binary was just built by us.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read binary %s", bin)
	}
	app, err := layer([]file{
		{path: "usr/", dir: true},
		{path: "usr/local/", dir: true},
		{path: "usr/local/bin/", dir: true},
		{path: r.BinaryPath()[1:], mode: 0o755, data: b},
	})
	if err != nil {
		return nil, errors.Wrapf(err, "cannot create binary layer of %s", r.Name)
	}
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	at := v1.Time{Time: created}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: base, History: v1.History{Created: at, CreatedBy: "armada-crossplane: base (passwd, group, CA certificates)"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: at, CreatedBy: "armada-crossplane: go build " + r.Package}},
	)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot append layers of %s", r.Name)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read config of %s", r.Name)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       strconv.Itoa(NonRoot) + ":" + strconv.Itoa(NonRoot),
		Entrypoint: []string{r.BinaryPath()},
		WorkingDir: "/",
		// PATH only: nothing from the build environment leaks in.
		Env: []string{"PATH=/usr/local/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":  r.Name,
			"org.opencontainers.image.source": "https://github.com/armadaproject/armada-crossplane",
		},
	}
	if len(r.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range r.Ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	return img, errors.Wrapf(err, "cannot set config of %s", r.Name)
}

// compile cross-compiles the runtime's static binary for linux/arch into
// WorkDir and returns its path. The flags make the binary depend only on
// the source and the Go version: no cgo, no file system paths, no VCS
// stamp, no build id, and no DWARF compiled (the link's -w would drop
// it). The compiler flags are the Makefile's (GO_BUILD_FLAGS), so the
// tests' build cache serves the host architecture's packages.
func compile(ctx context.Context, r Runtime, arch string, o Options) (string, error) {
	out := filepath.Join(o.WorkDir, r.Name+"-linux-"+arch)
	if err := os.MkdirAll(o.WorkDir, 0o750); err != nil {
		return "", errors.Wrap(err, "cannot create work directory")
	}
	args := append([]string{"build"}, buildFlags()...)
	args = append(args, "-buildvcs=false", "-ldflags", "-s -w -buildid=", "-o", out, r.Package)
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // A package from the Runtimes table.
	cmd.Dir = o.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.Wrapf(err, "cannot build %s for linux/%s: %s", r.Package, arch, stderr.String())
	}
	return out, nil
}

// buildFlags are the compiler flags of every Go build here: the Makefile's
// GO_BUILD_FLAGS (TestBuildFlagsMatchMakefile).
func buildFlags() []string { return []string{"-trimpath", "-gcflags=all=-dwarf=false"} }

// WriteTarball writes img as an image tarball (the format `crossplane xpkg
// build --embed-runtime-image-tarball` reads) tagged ref.
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return errors.Wrapf(err, "cannot parse image reference %q", ref)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return errors.Wrap(err, "cannot create output directory")
	}
	return errors.Wrapf(tarball.WriteToFile(path, tag, img), "cannot write image tarball %s", path)
}

// WriteLayout writes one image per architecture as an OCI image layout in
// dir whose index.json is a multi-platform index, in Architectures order,
// for pushing the runtime images on their own (e.g. `crane push DIR REF`
// or `skopeo copy --all oci:DIR ...`).
func WriteLayout(dir string, imgs map[string]v1.Image) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range Architectures {
		img, ok := imgs[arch]
		if !ok {
			continue
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	if err := os.RemoveAll(dir); err != nil {
		return errors.Wrapf(err, "cannot clean %s", dir)
	}
	_, err := layout.Write(dir, idx)
	return errors.Wrapf(err, "cannot write image layout %s", dir)
}
