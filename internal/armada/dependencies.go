package armada

// A Dependency is one pinned release of a third-party component whose
// kinds the compositions compose: a Crossplane provider the shipped
// Configuration depends on (Package set; internal/build/xpkg writes its
// spec.dependsOn from this table, at exactly these versions), or an
// operator whose kinds the function composes for it to run. The tests
// validate composed objects against exactly these releases' CRDs
// (internal/harness/thirdparty).
type Dependency struct {
	// Name is the short name, e.g. provider-helm.
	Name string
	// Module and Version are its Go module at the pinned release.
	Module, Version string
	// CRDDir is where the module ships its CRDs.
	CRDDir string
	// Generated is set for a module that ships Go types but no CRDs:
	// `make generate` generates them with controller-gen from the pinned
	// types (tools/promcrds pins the same version) into
	// internal/harness/thirdparty/crds/<name>-<version>, where they are
	// committed.
	Generated bool
	// Package is its Crossplane package, without a tag; empty for
	// operators (CloudNativePG, cert-manager), which are not Crossplane
	// packages.
	Package string
	// Why the version is pinned.
	Why string
}

// Dependencies is the table of pinned third-party releases, beside
// Armada's (Releases) and Pulsar's (PulsarVersion).
var Dependencies = []Dependency{
	{
		Name: "provider-kubernetes", Module: "github.com/crossplane-contrib/provider-kubernetes", Version: "v1.3.1",
		CRDDir: "package/crds", Package: "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes",
		Why: "the local control plane runs it; v1.4.1, the newest, needs Go 1.27 and crossplane-runtime " +
			"v2.5.0-rc.0.0.20260922181840-9d02af3667a0 and crossplane/apis v2.4.1, which the Go module proxy refuses here (403)",
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
