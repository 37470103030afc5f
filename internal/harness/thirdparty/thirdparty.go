// Package thirdparty fetches the CRDs of the Crossplane providers and the
// CloudNativePG, Barman Cloud Plugin, cert-manager and prometheus-operator
// releases whose kinds function-armada composes, pinned in
// armada.Dependencies, from the Go module proxy at those versions: offline
// validation and the local control plane check composed objects against
// exactly these schemas.
package thirdparty

import (
	"context"
	"path/filepath"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// A Provider is one pinned dependency of the compositions, as the version
// table declares it (armada.Dependencies), with where its CRDs are.
type Provider struct {
	armada.Dependency
}

// Pinned are the providers and operators the compositions use: the rows of
// armada.Dependencies, declared once beside Armada's own version table.
var Pinned = func() []Provider {
	out := make([]Provider, 0, len(armada.Dependencies))
	for _, d := range armada.Dependencies {
		out = append(out, Provider{Dependency: d})
	}
	return out
}()

// Get returns a pinned provider by name.
func Get(name string) (Provider, bool) {
	for _, p := range Pinned {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// CRDDirs returns the CRD directories of every pinned provider, downloading
// their modules into the module cache if needed.
func CRDDirs(ctx context.Context) ([]string, error) {
	dirs := make([]string, 0, len(Pinned))
	for _, p := range Pinned {
		d, err := p.CRDPath(ctx)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// CRDPath is the directory holding the provider's CRDs: in its module,
// downloaded if needed, or, for Generated ones, committed here.
func (p Provider) CRDPath(ctx context.Context) (string, error) {
	if p.Generated {
		return GeneratedDir(p), nil
	}
	d, err := testutil.ModuleDir(ctx, p.Module, p.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, p.CRDDir), nil
}

// GeneratedDir is where a Generated provider's CRDs are committed.
func GeneratedDir(p Provider) string {
	return testutil.Path("internal", "harness", "thirdparty", "crds", p.Name+"-"+p.Version)
}
