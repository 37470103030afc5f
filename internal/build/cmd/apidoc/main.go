// Command apidoc writes docs/reference/api.md from the XRDs function-armada
// serves (package/xarmada) and provider-armada's CRDs
// (package/provider/crds): every field with its type, default, validation
// (enum, pattern, bounds, CEL rules with their messages) and description.
// `make generate` runs it and `make check-diff` keeps the page current, so
// the reference is the schema the API server enforces, never a hand copy.
package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
)

// Sources are the schema files documented, in the page's order: the claim
// API first, then the namespaced API, then provider-armada's managed
// resource and configs.
var Sources = []string{
	"package/xarmada/definition.yaml",
	"package/xarmada/queue-definition.yaml",
	"package/xarmada/namespaced-definition.yaml",
	"package/xarmada/namespaced-queue-definition.yaml",
	"package/provider/crds",
}

func main() {
	root := flag.String("root", ".", "repository root the sources are read from")
	out := flag.String("out", "docs/reference/api.md", "file to write")
	flag.Parse()
	cli.Main("apidoc", func(context.Context) error { return run(*root, *out) })
}

func run(root, out string) error {
	b, err := Generate(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o750); err != nil {
		return errors.Wrap(err, "cannot create output directory")
	}
	return errors.Wrap(os.WriteFile(out, b, 0o600), "cannot write API reference")
}

// Generate reads the sources under root and returns the page.
func Generate(root string) ([]byte, error) {
	var kinds []Kind
	for _, src := range Sources {
		files, err := yamlFiles(filepath.Join(root, src))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f) //nolint:gosec // The repository's own files.
			if err != nil {
				return nil, errors.Wrapf(err, "cannot read %s", f)
			}
			rel, err := filepath.Rel(root, f)
			if err != nil {
				return nil, errors.Wrapf(err, "cannot relate %s to %s", f, root)
			}
			ks, err := ParseKinds(b, filepath.ToSlash(rel))
			if err != nil {
				return nil, errors.Wrapf(err, "cannot parse %s", f)
			}
			kinds = append(kinds, ks...)
		}
	}
	sort.SliceStable(kinds, func(i, j int) bool { return rank(kinds[i].Kind) < rank(kinds[j].Kind) })
	var buf bytes.Buffer
	Render(&buf, kinds)
	return buf.Bytes(), nil
}

// order puts provider-armada's managed resource before its configs, and
// each config before its cluster-scoped twin; kinds not listed keep their
// place after these.
var order = []string{
	"XArmada", "XArmadaQueue", "Armada", "ArmadaQueue",
	"Queue", "ProviderConfig", "ClusterProviderConfig", "ProviderConfigUsage", "ClusterProviderConfigUsage",
}

func rank(kind string) int {
	if i := slices.Index(order, kind); i >= 0 {
		return i
	}
	return len(order)
}

// yamlFiles is path itself, or the YAML files in the directory path, sorted.
func yamlFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list %s", path)
	}
	sort.Strings(files)
	return files, nil
}
