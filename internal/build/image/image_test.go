package image

import (
	"archive/tar"
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// entry is what the tests check of one file in an image.
type entry struct {
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Size     int64
}

// entries returns the flattened file system of img.
func entries(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	got := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("cannot read image file system: %v", err)
		}
		got[h.Name] = entry{Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.UTC(), Size: h.Size}
	}
}

func TestAssemble(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("not really a binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	dirEntry := entry{Mode: 0o755, ModTime: epoch}
	base := map[string]entry{
		"etc":                  dirEntry,
		"etc/group":            {Mode: 0o644, ModTime: epoch, Size: int64(len(group))},
		"etc/passwd":           {Mode: 0o644, ModTime: epoch, Size: int64(len(passwd))},
		"home":                 dirEntry,
		"home/nonroot":         {Mode: 0o700, UID: NonRoot, GID: NonRoot, ModTime: epoch},
		"tmp":                  {Mode: 0o1777, ModTime: epoch},
		"usr":                  dirEntry,
		"usr/local":            dirEntry,
		"usr/local/bin":        dirEntry,
		"usr/local/bin/fn-one": {Mode: 0o755, ModTime: epoch, Size: 19},
	}
	withCA := map[string]entry{
		"etc/ssl":                           dirEntry,
		"etc/ssl/certs":                     dirEntry,
		"etc/ssl/certs/ca-certificates.crt": {Mode: 0o644, ModTime: epoch, Size: 28},
	}
	maps.Copy(withCA, base)
	type want struct {
		files   map[string]entry
		config  v1.Config
		created time.Time
	}
	cases := map[string]struct {
		reason string
		r      Runtime
		o      Options
		want   want
	}{
		"Function": {
			reason: "A runtime without CA certificates gets the base files and its binary, runs as nonroot and exposes its ports.",
			r:      Runtime{Name: "fn-one", Package: "./x", Ports: []string{"9443/tcp"}},
			want: want{
				files: base,
				config: v1.Config{
					User: "65532:65532", Entrypoint: []string{"/usr/local/bin/fn-one"}, WorkingDir: "/",
					Env:          []string{"PATH=/usr/local/bin"},
					ExposedPorts: map[string]struct{}{"9443/tcp": {}},
					Labels: map[string]string{
						"org.opencontainers.image.title":  "fn-one",
						"org.opencontainers.image.source": "https://github.com/armadaproject/armada-crossplane",
					},
				},
				created: epoch,
			},
		},
		"ProviderWithSourceDateEpoch": {
			reason: "A runtime with CACerts gets the CA bundle; Created is honoured.",
			r:      Runtime{Name: "fn-one", Package: "./x", CACerts: true},
			o:      Options{CABundle: ca, Created: time.Unix(1700000000, 0)},
			want: want{
				files: withCA,
				config: v1.Config{
					User: "65532:65532", Entrypoint: []string{"/usr/local/bin/fn-one"}, WorkingDir: "/",
					Env: []string{"PATH=/usr/local/bin"},
					Labels: map[string]string{
						"org.opencontainers.image.title":  "fn-one",
						"org.opencontainers.image.source": "https://github.com/armadaproject/armada-crossplane",
					},
				},
				created: time.Unix(1700000000, 0).UTC(),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, err := Assemble(tc.r, "arm64", bin, tc.o)
			if err != nil {
				t.Fatalf("%s\nAssemble(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.files, entries(t, img)); diff != "" {
				t.Errorf("%s\nAssemble(...) files: -want, +got:\n%s", tc.reason, diff)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.config, cf.Config); diff != "" {
				t.Errorf("%s\nAssemble(...) config: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.created, cf.Created.UTC()); diff != "" {
				t.Errorf("%s\nAssemble(...) created: -want, +got:\n%s", tc.reason, diff)
			}
			if cf.OS != "linux" || cf.Architecture != "arm64" {
				t.Errorf("%s\nAssemble(...) platform: want linux/arm64, got %s/%s", tc.reason, cf.OS, cf.Architecture)
			}
			again, err := Assemble(tc.r, "arm64", bin, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(digest(t, img), digest(t, again)); diff != "" {
				t.Errorf("%s\nAssemble(...) twice: digests differ: -first, +second:\n%s", tc.reason, diff)
			}
		})
	}
}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// TestBuildReproducible compiles function-armada twice, into different
// directories, and checks both images have the same digest.
func TestBuildReproducible(t *testing.T) {
	r, ok := Lookup("function-armada")
	if !ok {
		t.Fatal("no function-armada row in Runtimes")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	digests := make([]string, 0, 2)
	for i := range 2 {
		img, err := Build(context.Background(), r, runtime.GOARCH, Options{RepoRoot: root, WorkDir: filepath.Join(t.TempDir(), "w", string(rune('a'+i)))})
		if err != nil {
			t.Fatalf("Build(...): %v", err)
		}
		digests = append(digests, digest(t, img))
	}
	if diff := cmp.Diff(digests[0], digests[1]); diff != "" {
		t.Errorf("Build(...) twice: digests differ: -first, +second:\n%s", diff)
	}
	t.Logf("function-armada linux/%s image digest: %s", runtime.GOARCH, digests[0])
}

func TestAvailable(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "cmd", "here"), 0o750); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		pkg    string
		want   bool
	}{
		"Exists":  {reason: "A runtime whose Go package exists is available.", pkg: "./cmd/here", want: true},
		"Missing": {reason: "A row can land before its code: it is then not available.", pkg: "./cmd/provider", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (Runtime{Package: tc.pkg}).Available(root); got != tc.want {
				t.Errorf("%s\nAvailable(): want %v, got %v", tc.reason, tc.want, got)
			}
		})
	}
}

func TestWriteLayout(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	want := make([]string, 0, len(Architectures))
	for _, arch := range Architectures {
		img, err := Assemble(Runtime{Name: "fn-one"}, arch, bin, Options{})
		if err != nil {
			t.Fatal(err)
		}
		imgs[arch] = img
		want = append(want, "linux/"+arch+" "+digest(t, img))
	}
	out := filepath.Join(dir, "layout")
	if err := WriteLayout(out, imgs); err != nil {
		t.Fatalf("WriteLayout(...): %v", err)
	}
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatalf("cannot read the layout back: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(m.Manifests))
	for _, d := range m.Manifests {
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture+" "+d.Digest.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WriteLayout(...) index: -want, +got:\n%s", diff)
	}
}

// TestBuildFlagsMatchMakefile checks the images compile with the flags of
// every other Go build here (the Makefile's GO_BUILD_FLAGS): Go's build
// cache keys a compiled package by them, and with other flags the whole
// dependency tree the tests compiled compiles again for the images.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	b, err := os.ReadFile(testutil.Path("Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GO_BUILD_FLAGS := (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no GO_BUILD_FLAGS")
	}
	if diff := cmp.Diff(strings.Fields(string(m[1])), buildFlags()); diff != "" {
		t.Errorf("buildFlags(): -the Makefile's GO_BUILD_FLAGS, +the images':\n%s", diff)
	}
}
