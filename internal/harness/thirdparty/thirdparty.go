// Package thirdparty pins the Crossplane providers and the CloudNativePG,
// Barman Cloud Plugin, cert-manager and prometheus-operator releases whose
// kinds function-armada composes, and fetches their CRDs from the Go module
// proxy at those versions: offline validation and the local control plane
// check composed objects against exactly these schemas.
package thirdparty

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Provider is one pinned dependency of the compositions.
type Provider struct {
	// Name is the short name, e.g. provider-helm.
	Name string
	// Module and Version are its Go module at the pinned release.
	Module, Version string
	// CRDDir is where the module ships its CRDs.
	CRDDir string
	// Generated is set for a module that ships Go types but no CRDs:
	// `make generate` generates them with controller-gen from the pinned
	// types (tools/promcrds pins the same version) into
	// crds/<name>-<version> beside this file, where they are committed.
	Generated bool
	// Package is its Crossplane package, without a tag; empty for
	// operators (CloudNativePG, cert-manager), which are not Crossplane
	// packages.
	Package string
	// Why the version is pinned.
	Why string
}

// Pinned are the providers and operators the compositions use.
var Pinned = []Provider{
	{
		Name: "provider-kubernetes", Module: "github.com/crossplane-contrib/provider-kubernetes", Version: "v1.3.1",
		CRDDir: "package/crds", Package: "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes",
		Why: "newest release built on crossplane-runtime v2.3 and Go 1.26; the local control plane runs it",
	},
	{
		Name: "provider-helm", Module: "github.com/crossplane-contrib/provider-helm", Version: "v1.3.0",
		CRDDir: "package/crds", Package: "xpkg.crossplane.io/crossplane-contrib/provider-helm",
		Why: "newest release whose module (and so its CRDs) the proxy serves; namespaced helm.m.crossplane.io Release",
	},
	{
		Name: "provider-sql", Module: "github.com/crossplane-contrib/provider-sql", Version: "v0.16.0",
		CRDDir: "package/crds", Package: "xpkg.crossplane.io/crossplane-contrib/provider-sql",
		Why: "first release with namespaced postgresql.sql.m.crossplane.io kinds and secretKeyMapping",
	},
	{
		Name: "cloudnative-pg", Module: "github.com/cloudnative-pg/cloudnative-pg", Version: "v1.29.0",
		CRDDir: "config/crd/bases",
		Why:    "newest release on Kubernetes 1.35 libraries; its default operand image is pinned in the function",
	},
	{
		Name: "plugin-barman-cloud", Module: "github.com/cloudnative-pg/plugin-barman-cloud", Version: "v0.15.0",
		CRDDir: "config/crd/bases",
		Why: "CloudNativePG's Barman Cloud Plugin (barmancloud.cnpg.io/v1 ObjectStore) spec.postgres.backup and restore compose: " +
			"newest release the proxy serves; needs CloudNativePG 1.26 or newer (the in-tree barmanObjectStore is deprecated)",
	},
	{
		Name: "cert-manager", Module: "github.com/cert-manager/cert-manager", Version: "v1.19.1",
		CRDDir: "deploy/crds",
		Why: "the Certificate kind (cert-manager.io/v1) spec.tls.issuerRef composes; newest release in the module cache, " +
			"whose deploy/crds are plain YAML",
	},
	{
		Name: "prometheus-operator", Module: "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring", Version: "v0.95.2",
		Generated: true,
		Why: "the ServiceMonitor and PrometheusRule kinds (monitoring.coreos.com/v1) spec.monitoring composes; the proxy serves " +
			"only the API module, whose types controller-gen turns into the CRDs as prometheus-operator generates its own",
	},
}

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
	d, err := ModuleDir(ctx, p.Module, p.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, p.CRDDir), nil
}

// GeneratedDir is where a Generated provider's CRDs are committed.
func GeneratedDir(p Provider) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		file = "."
	}
	return filepath.Join(filepath.Dir(file), "crds", p.Name+"-"+p.Version)
}

// ModuleDir returns the module cache directory of module@version,
// downloading the module if it is not cached yet. It runs outside any
// module, so it never touches a go.mod.
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version) //nolint:gosec // Pinned modules from this package's table.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var m struct {
		Dir   string `json:"Dir"`
		Error string `json:"Error"`
	}
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", errors.Errorf("cannot download %s@%s: %s", module, version, m.Error)
	}
	if err != nil {
		return "", errors.Wrapf(err, "cannot download %s@%s: %s", module, version, stderr.String())
	}
	if m.Dir == "" {
		return "", errors.Errorf("cannot find %s@%s in the module cache", module, version)
	}
	return m.Dir, nil
}
