package node

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// Images the node always serves.
const (
	// PauseImage is the pod sandbox image containerd runs: its name is the
	// one Kubernetes' own default names, served from the node's registry.
	PauseImage = "registry.k8s.io/pause:3.10.1"
	// JobImage runs testimages/job: its arguments choose what it checks,
	// how long it runs and its exit code. Its image sets no user (it runs
	// as root unless the pod says otherwise), like many job images.
	JobImage = "armada-crossplane/node-job:v1"
	// ProbeImage runs testimages/probe: it serves or dials TCP and UDP
	// ports, for stand-in pods that show what NetworkPolicies let through.
	// Its user is 1000:2000, like Armada's images.
	ProbeImage = "armada-crossplane/node-probe:v1"
)

// modulePath is this repository's Go module.
const modulePath = "github.com/armadaproject/armada-crossplane"

// A File is one regular file or directory in an image.
type File struct {
	// Path is absolute, inside the image.
	Path string
	// Mode holds the permission bits; Dir makes it a directory.
	Mode int64
	Dir  bool
	Data []byte
}

// An Image is an OCI image built from files, on no base image.
type Image struct {
	// Ref names it as pod specs do: "gresearch/armada-server:0.22.8"
	// (docker.io), "registry.k8s.io/pause:3.10.1".
	Ref    string
	Files  []File
	Config v1.Config
}

// Base is what every image holds besides its own files: /etc/passwd and
// /etc/group with root and user as uid:gid (home /app; gid 0 makes user a
// member of group root, as Pulsar's image does, not a second group 0), the
// machine's CA certificates at /etc/ssl/certs/ca-certificates.crt (where
// Alpine and Debian keep them), and a world-writable /tmp.
func Base(user string, uid, gid int) ([]File, error) {
	u, g := strconv.Itoa(uid), strconv.Itoa(gid)
	group := "root:x:0:\n" + user + ":x:" + g + ":" + user + "\n"
	if gid == 0 {
		group = "root:x:0:" + user + "\n"
	}
	files := make([]File, 0, 7)
	files = append(files,
		File{Path: "/etc", Dir: true, Mode: 0o755},
		File{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" + user + ":x:" + u + ":" + g + "::/app:/sbin/nologin\n")},
		File{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		File{Path: "/tmp", Dir: true, Mode: 0o1777})
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the machine's CA certificates")
	}
	return append(files,
		File{Path: "/etc/ssl", Dir: true, Mode: 0o755},
		File{Path: "/etc/ssl/certs", Dir: true, Mode: 0o755},
		File{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: ca}), nil
}

// layer is one uncompressed tar of files, parents first, with fixed
// timestamps and owners, so the same files give the same digest; the
// layer is served uncompressed.
func layer(files []File) (v1.Layer, error) {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		h := &tar.Header{Name: strings.TrimPrefix(path.Clean(f.Path), "/"), Mode: f.Mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, errors.Wrapf(err, "cannot write %s to a layer", f.Path)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, errors.Wrapf(err, "cannot write %s to a layer", f.Path)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, errors.Wrap(err, "cannot close a layer")
	}
	// Uncompressed: the registry is on loopback, and gzip, once for the
	// digest and again for the push, took most of a node's start (87 s
	// for 14 images, cold).
	return static.NewLayer(buf.Bytes(), types.DockerUncompressedLayer), nil
}

// build makes the OCI image of im for linux/amd64.
func (im Image) build() (v1.Image, error) {
	l, err := layer(im.Files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot build image %s", im.Ref)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read the config of image %s", im.Ref)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = im.Config
	cf.Created = v1.Time{Time: time.Unix(0, 0)}
	img, err = mutate.ConfigFile(img, cf)
	return img, errors.Wrapf(err, "cannot set the config of image %s", im.Ref)
}

// A Registry is an OCI registry in this process on a loopback port,
// holding images in memory: the node's containerd pulls every image from
// it.
type Registry struct {
	addr string
	srv  *http.Server
}

// startRegistry serves a registry on 127.0.0.1:port.
func startRegistry(ctx context.Context, port int) (*Registry, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Wrap(err, "cannot listen for the node's registry")
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &Registry{addr: addr, srv: srv}, nil
}

// Addr is the registry's host:port.
func (r *Registry) Addr() string { return r.addr }

// Push builds im and stores it under im.Ref's repository and tag, which
// is where containerd, mapping every registry's names here, looks.
func (r *Registry) Push(ctx context.Context, im Image) error {
	ref, err := name.ParseReference(im.Ref)
	if err != nil {
		return errors.Wrapf(err, "cannot parse image name %q", im.Ref)
	}
	tag := "latest"
	if t, ok := ref.(name.Tag); ok {
		tag = t.TagStr()
	}
	dst, err := name.NewTag(r.addr+"/"+ref.Context().RepositoryStr()+":"+tag, name.Insecure)
	if err != nil {
		return errors.Wrapf(err, "cannot name image %q in the node's registry", im.Ref)
	}
	img, err := im.build()
	if err != nil {
		return err
	}
	return errors.Wrapf(remote.Write(dst, img, remote.WithContext(ctx)), "cannot push image %s", im.Ref)
}

func (r *Registry) stop() error {
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Wrap(r.srv.Shutdown(ctx), "cannot stop the node's registry")
}

// buildStatic builds the Go package pkg (an import path of this module)
// as a statically linked binary into dir, and returns its contents.
func buildStatic(ctx context.Context, dir, pkg string) ([]byte, error) {
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-s -w", "-o", out, pkg) //nolint:gosec // A package of this module.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, errors.Wrapf(err, "cannot build %s: %s", pkg, b)
	}
	b, err := os.ReadFile(out) //nolint:gosec // The binary just built.
	return b, errors.Wrapf(err, "cannot read %s", out)
}

// testImages are the pause, job and probe images, from the programs under
// testimages.
func testImages(ctx context.Context, dir string) ([]Image, error) {
	pause, err := buildStatic(ctx, dir, modulePath+"/internal/harness/node/testimages/pause")
	if err != nil {
		return nil, err
	}
	job, err := buildStatic(ctx, dir, modulePath+"/internal/harness/node/testimages/job")
	if err != nil {
		return nil, err
	}
	probe, err := buildStatic(ctx, dir, modulePath+"/internal/harness/node/testimages/probe")
	if err != nil {
		return nil, err
	}
	base, err := Base("armada", 1000, 2000)
	if err != nil {
		return nil, err
	}
	return []Image{{
		Ref:    PauseImage,
		Files:  append(slices.Clone(base), File{Path: "/pause", Mode: 0o755, Data: pause}),
		Config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
	}, {
		Ref:    JobImage,
		Files:  append(slices.Clone(base), File{Path: "/job", Mode: 0o755, Data: job}),
		Config: v1.Config{Entrypoint: []string{"/job"}},
	}, {
		Ref:    ProbeImage,
		Files:  append(slices.Clone(base), File{Path: "/probe", Mode: 0o755, Data: probe}),
		Config: v1.Config{Entrypoint: []string{"/probe"}, User: "1000:2000"},
	}}, nil
}

// coreDNSImage is CoreDNSImage from the binary at binary: uid 65532 as
// CoreDNS's own image runs.
func coreDNSImage(binary string) (Image, error) {
	bin, err := os.ReadFile(binary) //nolint:gosec // CoreDNS from the tool cache.
	if err != nil {
		return Image{}, errors.Wrapf(err, "cannot read %s", binary)
	}
	base, err := Base("coredns", 65532, 65532)
	if err != nil {
		return Image{}, err
	}
	return Image{
		Ref:    CoreDNSImage,
		Files:  append(base, File{Path: "/coredns", Mode: 0o755, Data: bin}),
		Config: v1.Config{Entrypoint: []string{"/coredns"}, User: "65532:65532"},
	}, nil
}

// GhostunnelImage is the TLS sidecar's image (ghostunnel/ghostunnel:VERSION)
// from the binary at binary, laid out as its Dockerfile lays it out:
// /usr/bin/ghostunnel as the entrypoint, no USER (the composed pod says
// who runs it), with the libraries the binary here is linked against.
func GhostunnelImage(binary, version string) (Image, error) {
	bin, err := os.ReadFile(binary) //nolint:gosec // ghostunnel from the tool cache.
	if err != nil {
		return Image{}, errors.Wrapf(err, "cannot read %s", binary)
	}
	base, err := Base("ghostunnel", 1000, 2000)
	if err != nil {
		return Image{}, err
	}
	libs, err := runtimeLibraries([]string{binary})
	if err != nil {
		return Image{}, err
	}
	files := slices.Concat(base, libs, []File{{Path: "/usr/bin/ghostunnel", Mode: 0o755, Data: bin}})
	return Image{
		Ref:    "ghostunnel/ghostunnel:" + version,
		Files:  withParents(files),
		Config: v1.Config{Entrypoint: []string{"/usr/bin/ghostunnel"}},
	}, nil
}

// ComposedImages are the images a render of Armada at version names:
// Armada's eight components (ArmadaImage), ghostunnel's from the binary at
// ghostunnel, and Pulsar's (the topic Job's, PulsarImage).
func ComposedImages(ctx context.Context, version, ghostunnel string) ([]Image, error) {
	src, err := ArmadaSourcesFor(ctx, version)
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(ArmadaComponents)+2)
	for _, comp := range ArmadaComponents {
		im, err := ArmadaImage(src, comp)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	gt, err := GhostunnelImage(ghostunnel, armada.TLSProxyVersion)
	if err != nil {
		return nil, err
	}
	pulsar, err := PulsarImage(PulsarImageOptions{})
	if err != nil {
		return nil, err
	}
	return append(out, gt, pulsar), nil
}
