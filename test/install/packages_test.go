package install

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/image"
	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
)

// readImage reads the package image in an .xpkg file.
func readImage(t *testing.T, file string) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("cannot read package %s: %v", file, err)
	}
	return img
}

// imageFile returns the content of one file of img's flattened file system.
func imageFile(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the image", path)
		}
		if err != nil {
			t.Fatalf("cannot read image file system: %v", err)
		}
		if h.Name == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// packageObjects returns the objects in a package's package.yaml, the
// stream Crossplane's package manager parses.
func packageObjects(t *testing.T, img v1.Image) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.Parse(imageFile(t, img, "package.yaml"))
	if err != nil {
		t.Fatalf("cannot decode package.yaml: %v", err)
	}
	return objs
}

// kindName is how the tests name an object of a package.
func kindName(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }

func TestPackageContents(t *testing.T) {
	res := packages(t)
	fnName, err := xpkg.PackageName(xpkg.DefaultRegistry + "/function-armada")
	if err != nil {
		t.Fatal(err)
	}
	dep := func(kind, pkg, v string) any {
		return map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "package": pkg, "version": v}
	}
	// Exact versions: ours at the version built, provider-armada once its
	// package is built, provider-kubernetes at the version the control plane
	// runs, provider-helm and provider-sql at the versions the offline
	// validation checked the composed objects against.
	wantDeps := []any{dep("Function", xpkg.DefaultRegistry+"/function-armada", version)}
	if _, ok := res.Lookup("provider-armada"); ok {
		wantDeps = append(wantDeps, dep("Provider", xpkg.DefaultRegistry+"/provider-armada", version))
	}
	wantDeps = append(wantDeps,
		dep("Provider", "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes", controlplane.ProviderKubernetesVersion),
		dep("Provider", "xpkg.crossplane.io/crossplane-contrib/provider-helm", "v1.3.0"),
		dep("Provider", "xpkg.crossplane.io/crossplane-contrib/provider-sql", "v0.16.0"),
	)
	type want struct {
		objects   []string
		dependsOn []any
		functions []any
	}
	cases := map[string]struct {
		reason string
		pkg    string
		want   want
	}{
		"Function": {
			reason: "function-armada's package holds only its metadata.",
			pkg:    "function-armada",
			want:   want{objects: []string{"Function/function-armada"}},
		},
		"Configuration": {
			reason: "configuration-armada holds every XRD and Composition (the claims' and the namespaced XRs') and the activation policy, pins our packages at its own version and " +
				"the providers at the versions the tests ran, and its Compositions name the function as Crossplane installs it.",
			pkg: "configuration-armada",
			want: want{
				objects: []string{
					"Configuration/configuration-armada",
					"ManagedResourceActivationPolicy/armada",
					"Composition/xarmadas.platform.armadaproject.io",
					"CompositeResourceDefinition/xarmadas.platform.armadaproject.io",
					"Composition/armadas.platform.armadaproject.io",
					"CompositeResourceDefinition/armadas.platform.armadaproject.io",
					"Composition/armadaqueues.platform.armadaproject.io",
					"CompositeResourceDefinition/armadaqueues.platform.armadaproject.io",
					"Composition/xarmadaqueues.platform.armadaproject.io",
					"CompositeResourceDefinition/xarmadaqueues.platform.armadaproject.io",
				},
				dependsOn: wantDeps,
				functions: []any{fnName, fnName, fnName, fnName},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := packageObjects(t, readImage(t, hostFile(t, lookup(t, res, tc.pkg))))
			got := want{}
			for _, o := range objs {
				got.objects = append(got.objects, kindName(o))
				switch o.GetKind() {
				case "Configuration":
					got.dependsOn, _, _ = unstructured.NestedSlice(o.Object, "spec", "dependsOn")
				case "Composition":
					steps, _, _ := unstructured.NestedSlice(o.Object, "spec", "pipeline")
					for _, s := range steps {
						n, _, _ := unstructured.NestedString(s.(map[string]any), "functionRef", "name")
						got.functions = append(got.functions, n)
					}
				}
				if c, _, _ := unstructured.NestedString(o.Object, "spec", "crossplane", "version"); o.GetAPIVersion() == "meta.pkg.crossplane.io/v1" && c != ">=v2.0.0" {
					t.Errorf("%s\n%s spec.crossplane.version: want >=v2.0.0, got %q", tc.reason, kindName(o), c)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\npackage.yaml of %s: -want, +got:\n%s", tc.reason, tc.pkg, diff)
			}
		})
	}
}

// TestProviderKubernetesPinned checks the version the Configuration pins
// (internal/harness/thirdparty) is the one the local control plane runs.
func TestProviderKubernetesPinned(t *testing.T) {
	p, _ := thirdparty.Get("provider-kubernetes")
	if diff := cmp.Diff(controlplane.ProviderKubernetesVersion, p.Version); diff != "" {
		t.Errorf("configuration-armada pins a provider-kubernetes the control plane does not run: -controlplane, +xpkg:\n%s", diff)
	}
}

// TestRuntimeImage checks each architecture's function package embeds a
// runtime image for that platform that runs as nonroot, and runs the
// host architecture's binary.
func TestRuntimeImage(t *testing.T) {
	b := lookup(t, packages(t), "function-armada")
	r, _ := image.Lookup("function-armada")
	for _, arch := range image.Architectures {
		t.Run(arch, func(t *testing.T) {
			img := readImage(t, b.Files[arch])
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			type platform struct{ OS, Arch, User string }
			if diff := cmp.Diff(platform{"linux", arch, "65532:65532"}, platform{cf.OS, cf.Architecture, cf.Config.User}); diff != "" {
				t.Errorf("runtime image config: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff([]string{r.BinaryPath()}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("runtime image entrypoint: -want, +got:\n%s", diff)
			}
			if arch != runtime.GOARCH {
				return
			}
			bin := filepath.Join(t.TempDir(), r.Name)
			if err := os.WriteFile(bin, imageFile(t, img, r.BinaryPath()[1:]), 0o700); err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(t.Context(), bin, "--help").CombinedOutput() //nolint:gosec // The binary the package embeds.
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", r.Name, err, out)
			}
			if !bytes.Contains(out, []byte("Crossplane composition function")) {
				t.Errorf("%s --help: want the function's usage, got:\n%s", r.Name, out)
			}
		})
	}
}
