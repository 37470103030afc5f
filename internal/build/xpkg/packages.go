// Package xpkg builds this repository's Crossplane packages: the
// function-armada Function, the provider-armada Provider (once its code and
// metadata exist) and the configuration-armada Configuration, with the
// pinned `crossplane xpkg build` CLI, embedding runtime images built by
// internal/build/image. Packages and dependencies are tables: adding one is a row.
package xpkg

import (
	"os"
	"path/filepath"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/build/image"
)

// DefaultRegistry is the registry and organisation packages are published
// under; `make xpkg XPKG_REGISTRY=...` overrides it.
const DefaultRegistry = "ghcr.io/armadaproject"

// Package kinds.
const (
	KindFunction      = "Function"
	KindProvider      = "Provider"
	KindConfiguration = "Configuration"
)

// A Package is one Crossplane package this repository builds.
type Package struct {
	// Name is the package's repository name under the registry, and the
	// file name of its .xpkg files.
	Name string
	// Kind is the meta.pkg.crossplane.io kind of its crossplane.yaml.
	Kind string
	// Root is the directory, relative to the repository root, holding its
	// crossplane.yaml and (for providers) crds/.
	Root string
	// Runtime names the image.Runtimes row embedded per architecture; empty
	// for packages without a runtime (Configurations).
	Runtime string
	// Include lists directories, relative to the repository root, whose
	// *.yaml files are copied into the package next to crossplane.yaml.
	Include []string
}

// Packages are built in this order: a Configuration comes last so that its
// dependencies on packages built in the same run can be pinned.
var Packages = []Package{
	{Name: "function-armada", Kind: KindFunction, Root: "package/function", Runtime: "function-armada"},
	// provider-armada's metadata and CRDs (package/provider/crossplane.yaml
	// and crds/) and its main (./cmd/provider) land from another branch;
	// the package is built as soon as both exist.
	{Name: "provider-armada", Kind: KindProvider, Root: "package/provider", Runtime: "provider-armada"},
	{Name: "configuration-armada", Kind: KindConfiguration, Root: "package/configuration", Include: []string{"package/xarmada"}},
}

// Available reports whether everything the package is built from exists
// under root: its crossplane.yaml and, if it has one, its runtime's Go
// package.
func (p Package) Available(root string) bool {
	if _, err := os.Stat(filepath.Join(root, p.Root, "crossplane.yaml")); err != nil {
		return false
	}
	if p.Runtime == "" {
		return true
	}
	r, ok := image.Lookup(p.Runtime)
	return ok && r.Available(root)
}

// A Dependency is one entry of configuration-armada's spec.dependsOn.
type Dependency struct {
	Kind string
	// Package is the OCI repository, without a tag.
	Package string
	// Version is the semantic version constraint. Empty means the version
	// being built, for packages built in the same run (see Built).
	Version string
	// Built names the Packages row this dependency is; it is added only if
	// that package was built in the same run.
	Built string
}

// Dependencies are configuration-armada's dependencies: ours at the
// version being built, and every Crossplane package the compositions use at
// the version armada.Dependencies pins, the one place those are declared.
// Versions are exact, so a Configuration release always installs what was
// tested with it.
func Dependencies(registry string) []Dependency {
	deps := []Dependency{
		{Kind: KindFunction, Package: registry + "/function-armada", Built: "function-armada"},
		{Kind: KindProvider, Package: registry + "/provider-armada", Built: "provider-armada"},
	}
	for _, p := range armada.Dependencies {
		if p.Package != "" {
			deps = append(deps, Dependency{Kind: KindProvider, Package: p.Package, Version: p.Version})
		}
	}
	return deps
}
