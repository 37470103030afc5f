package controlplane

import (
	"context"
	"os"
	"path/filepath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Pinned versions of the control plane's components. The tools/ wrapper
// modules pin the same versions.
const (
	EtcdVersion               = "v3.7.4"
	KubernetesVersion         = "v1.37.2"
	CrossplaneVersion         = "v2.4.0"
	ProviderKubernetesVersion = "v1.3.1"
)

// Modules whose module-cache directories hold the CRDs to apply.
const (
	crossplaneModule         = "github.com/crossplane/crossplane/v2"
	providerKubernetesModule = "github.com/crossplane-contrib/provider-kubernetes"
)

// clusterBins is the make target that builds the cluster's binaries.
const clusterBins = "cluster-bins"

// A binary is one tool binary the control plane needs and how to build it.
type binary struct {
	name   string
	path   *string
	file   string
	target string
	script string
}

// defaultBinaries fills in the default binary paths and checks every binary
// exists, returning an error that names the make target that builds a
// missing one.
func (o *Options) defaultBinaries() error {
	if o.BinDir == "" {
		dir, err := testutil.ToolDir("")
		if err != nil {
			return errors.Wrap(err, "set Options.BinDir")
		}
		o.BinDir = dir
	}
	kube := "kubernetes-" + KubernetesVersion
	bins := []binary{{
		name: "etcd " + EtcdVersion, path: &o.Etcd, file: "etcd-" + EtcdVersion,
		target: clusterBins, script: "tools/etcd/build.sh",
	}, {
		name: "kube-apiserver " + KubernetesVersion, path: &o.KubeAPIServer, file: filepath.Join(kube, "kube-apiserver"),
		target: clusterBins, script: "tools/kubernetes/build.sh",
	}, {
		name: "kube-controller-manager " + KubernetesVersion, path: &o.KubeControllerManager, file: filepath.Join(kube, "kube-controller-manager"),
		target: clusterBins, script: "tools/kubernetes/build.sh",
	}, {
		name: "crossplane core " + CrossplaneVersion, path: &o.Crossplane, file: "crossplane-core-" + CrossplaneVersion,
		target: "crossplane-core", script: "tools/build-crossplane.sh",
	}}
	if !o.SkipProviderKubernetes {
		bins = append(bins, binary{
			name: "provider-kubernetes " + ProviderKubernetesVersion, path: &o.ProviderKubernetes, file: "provider-kubernetes-" + ProviderKubernetesVersion,
			target: clusterBins, script: "tools/provider-kubernetes/build.sh",
		})
	}
	if o.JobFlow && !o.JobFlowLater {
		bins = append(bins, o.jobFlowBinaries()...)
	}
	if o.RunProviderSQL && !o.KubernetesOnly {
		bins = append(bins, o.providerSQLBinary())
	}
	if err := o.findBinaries(bins); err != nil {
		return err
	}
	if o.Function != "" && !isExecutable(o.Function) {
		return errors.Errorf("function-armada is missing at %s: build it with `go build -o %s ./functions/armada`, "+
			"or leave Options.Function empty to build it", o.Function, o.Function)
	}
	return nil
}

// findBinaries fills in the default path (in BinDir) of each binary that
// has none, and checks each exists, naming the make target that builds a
// missing one.
func (o *Options) findBinaries(bins []binary) error {
	for _, b := range bins {
		if *b.path == "" {
			*b.path = filepath.Join(o.BinDir, b.file)
		}
		if !isExecutable(*b.path) {
			return errors.Errorf("%s is missing at %s: build it with `make %s` (runs %s; cold builds take several minutes)", b.name, *b.path, b.target, b.script)
		}
	}
	return nil
}

// isExecutable reports whether path is an executable regular file.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// resolveCRDDirs fills in the CRD directories from the Go module cache.
func (c *ControlPlane) resolveCRDDirs(ctx context.Context) error {
	if c.opts.CrossplaneCRDDir == "" && !c.opts.KubernetesOnly {
		d, err := moduleDir(ctx, c.dir, crossplaneModule, CrossplaneVersion)
		if err != nil {
			return err
		}
		c.opts.CrossplaneCRDDir = filepath.Join(d, "cluster", "crds")
	}
	if c.opts.ProviderKubernetesCRDDir == "" && !c.opts.SkipProviderKubernetes && !c.opts.KubernetesOnly {
		d, err := moduleDir(ctx, c.dir, providerKubernetesModule, ProviderKubernetesVersion)
		if err != nil {
			return err
		}
		c.opts.ProviderKubernetesCRDDir = filepath.Join(d, "package", "crds")
	}
	return nil
}

// moduleDir finds a module in the module cache; see testutil.ModuleDir.
func moduleDir(ctx context.Context, _, module, version string) (string, error) {
	return testutil.ModuleDir(ctx, module, version)
}
