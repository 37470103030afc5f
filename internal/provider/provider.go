// Package provider wires provider-armada's controllers: Queue, and the
// ProviderConfig and ClusterProviderConfig usage accounting.
package provider

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

	"github.com/armadaproject/armada-crossplane/internal/provider/config"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

// Setup adds every provider-armada controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	for _, setup := range []func(ctrl.Manager, controller.Options) error{config.Setup, queue.Setup} {
		if err := setup(mgr, o); err != nil {
			return err
		}
	}
	return nil
}
