package install

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
)

// files is a tree of files to write, by slash-separated path.
type files map[string]string

func (f files) write(t *testing.T, root string) {
	t.Helper()
	for p, content := range f {
		path := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProviderPackage builds provider-armada the way `make xpkg` will once
// its code and metadata land from the other branch, from a stand-in
// repository holding only ./cmd/provider and package/provider/{crossplane.yaml,
// crds/}: the package holds the metadata and CRDs, embeds a runtime image
// per architecture, and the Configuration would not be built (its
// metadata is missing here), while function-armada is skipped.
func TestProviderPackage(t *testing.T) {
	root := t.TempDir()
	files{
		"go.mod":               "module example.com/provider\n\ngo 1.26.0\n",
		"cmd/provider/main.go": "package main\n\nfunc main() {}\n",
		"package/provider/crossplane.yaml": "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: provider-armada\n" +
			"spec:\n  crossplane:\n    version: \">=v2.0.0\"\n",
		"package/provider/crds/queues.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: queues.armada.m.armadaproject.io}
spec:
  group: armada.m.armadaproject.io
  names: {kind: Queue, listKind: QueueList, plural: queues, singular: queue}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
	}.write(t, root)
	res, err := xpkg.Build(t.Context(), xpkg.Options{RepoRoot: root, OutDir: t.TempDir(), CLI: cli(t), Version: version, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Build(...): %v", err)
	}
	if diff := cmp.Diff([]string{"configuration-armada", "function-armada"}, slices.Sorted(maps.Keys(res.Skipped))); diff != "" {
		t.Errorf("Build(...) skipped: -want, +got:\n%s", diff)
	}
	b := lookup(t, res, "provider-armada")
	if diff := cmp.Diff(xpkg.DefaultRegistry+"/provider-armada:"+version, b.Ref); diff != "" {
		t.Errorf("provider-armada ref: -want, +got:\n%s", diff)
	}
	for arch, file := range b.Files {
		objs := packageObjects(t, readImage(t, file))
		got := make([]string, 0, len(objs))
		for _, o := range objs {
			got = append(got, kindName(o))
		}
		if diff := cmp.Diff([]string{"Provider/provider-armada", "CustomResourceDefinition/queues.armada.m.armadaproject.io"}, got); diff != "" {
			t.Errorf("provider-armada %s package.yaml: -want, +got:\n%s", arch, diff)
		}
		cf, err := readImage(t, file).ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.Config.User != "65532:65532" {
			t.Errorf("provider-armada %s runtime: want %s as 65532:65532, got %s as %s", arch, arch, cf.Architecture, cf.Config.User)
		}
	}
}
