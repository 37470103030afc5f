package controlplane

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// KubeconfigBytes returns a kubeconfig for the API server, with a
// system:masters token user: what a provider-kubernetes ProviderConfig's
// Secret holds to reach this control plane, for example as a worker
// cluster of another one.
func (c *ControlPlane) KubeconfigBytes() ([]byte, error) { return c.kubeconfigBytes() }

// StopAPIServer kills kube-apiserver, for fault-injection tests: the
// cluster becomes unreachable, and etcd keeps its state. Restart it with
// StartAPIServer.
func (c *ControlPlane) StopAPIServer() error {
	return c.procs[ProcKubeAPIServer].stop()
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same port, certificates and etcd, and waits until it is ready.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	p := c.procs[ProcKubeAPIServer]
	if err := p.start(); err != nil {
		return err
	}
	return errors.Wrap(c.waitAPIServer(ctx, p), "cannot restart kube-apiserver")
}
